import type { ReactNode } from 'react'

/** A list read for the page, shown as a table, or why it could not be. */
export function Listed<T>({
  title,
  query,
  empty,
  head,
  row,
}: {
  title: string
  query: { data?: { data: T[] }; isError: boolean; error: Error | null }
  empty: string
  head: string[]
  row: (item: T) => ReactNode[]
}) {
  return (
    <>
      <h2>{title}</h2>
      {query.isError ? (
        <p role="alert">{query.error?.message}</p>
      ) : !query.data ? (
        <p aria-busy="true">Loading…</p>
      ) : query.data.data.length === 0 ? (
        <p>{empty}</p>
      ) : (
        <div className="table-scroll">
          <table>
            <thead>
              <tr>
                {head.map((h) => (
                  <th key={h} scope="col">
                    {h}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {query.data.data.map((item, n) => (
                <tr key={n}>
                  {row(item).map((cell, i) => (
                    <td key={i}>{cell}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  )
}
