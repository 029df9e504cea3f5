import { useState, type ReactNode } from 'react'
import { useQuery } from '@tanstack/react-query'

/**
 * A `<details>` whose content is read from the server when it is first opened (a row's bodies, a
 * model's endpoints), not with the page: `show` draws what came, `failed` what a refusal means.
 */
export function Disclosure<T>({
  summary,
  queryKey,
  load,
  show,
  failed = (err) => <p role="alert">{err.message}</p>,
}: {
  summary: string
  queryKey: unknown[]
  load: () => Promise<T>
  show: (data: T) => ReactNode
  failed?: (err: Error) => ReactNode
}) {
  const [open, setOpen] = useState(false)
  const read = useQuery({ queryKey, queryFn: load, enabled: open, retry: false })
  return (
    <details onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>{summary}</summary>
      {!open ? null : read.isPending ? (
        <p aria-busy="true">Loading…</p>
      ) : read.isError ? (
        failed(read.error)
      ) : (
        show(read.data)
      )}
    </details>
  )
}
