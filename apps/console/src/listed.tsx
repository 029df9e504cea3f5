import type { ReactNode } from 'react'

/** A list read for the page, shown as a table, or why it could not be. */
export function Listed<T>({
  title,
  label,
  query,
  empty,
  head,
  row,
}: {
  /** A heading of its own (empty: the page's heading above names the list). */
  title: string
  /** The table's name for assistive technology (and tests), where the title is empty. */
  label?: string
  query: { data?: { data: T[] }; isError: boolean; error: Error | null }
  empty: string
  head: string[]
  row: (item: T) => ReactNode[]
}) {
  return (
    <>
      {title && <h2>{title}</h2>}
      {query.isError ? (
        <p role="alert">{query.error?.message}</p>
      ) : !query.data ? (
        <p aria-busy="true">Loading…</p>
      ) : query.data.data.length === 0 ? (
        <p>{empty}</p>
      ) : (
        <TableScroll label={label ?? title}>
          <table aria-label={label ?? title}>
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
        </TableScroll>
      )}
    </>
  )
}

/**
 * A table's box, scrolled sideways on a narrow screen: a region that takes the keyboard's focus, so
 * its hidden columns are reached without a mouse (axe: scrollable-region-focusable).
 */
export function TableScroll({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="table-scroll" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  )
}
