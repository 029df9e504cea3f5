import { useState, type ReactNode } from 'react'
import { useQueryClient } from '@tanstack/react-query'

// Changes a page makes through the API: asked to confirm where they destroy, the lists they touch
// read again after, and what happened said in one line (a live region) with an Undo where the
// change can be taken back (the page says how: the state before, put back through the same API).

export interface Change {
  /** Asked before a destructive change; cancelled: nothing is sent. */
  confirm?: string
  /** Said once it is made. */
  done: string
  act: () => Promise<unknown>
  /** Puts back what the change replaced. */
  undo?: () => Promise<unknown>
}

export function useChanges(lists: unknown[][]) {
  const client = useQueryClient()
  const [said, setSaid] = useState<{ text: string; undo?: () => Promise<unknown>; failed?: boolean }>()
  const [busy, setBusy] = useState(false)
  const run = async (change: Change): Promise<boolean> => {
    if (change.confirm && !window.confirm(change.confirm)) return false
    setBusy(true)
    try {
      await change.act()
      setSaid({ text: change.done, undo: change.undo })
      return true
    } catch (err) {
      setSaid({ text: (err as Error).message, failed: true })
      return false
    } finally {
      setBusy(false)
      await Promise.all(lists.map((queryKey) => client.invalidateQueries({ queryKey })))
    }
  }
  const undo = said?.undo
  const line: ReactNode = said ? (
    <p role={said.failed ? 'alert' : 'status'} className={said.failed ? 'notice failing' : 'notice'}>
      {said.text}{' '}
      {undo && (
        <button type="button" onClick={() => void run({ done: 'Undone.', act: undo })} disabled={busy}>
          Undo
        </button>
      )}
    </p>
  ) : (
    // The live region stays in the page, so its first message is announced.
    <p role="status" className="notice" />
  )
  return { run, line, busy }
}

/** A JSON body for a change. */
export const body = (value: unknown) => JSON.stringify(value)
