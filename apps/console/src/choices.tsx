import { useState, type FormEvent } from 'react'
import { useQuery } from '@tanstack/react-query'
import { api } from './api'

// What several pages offer to choose from, written once: a spend limit's reset, the account's
// members, a list of models typed with commas, and a form that picks one of a list to act on.

/** The options of a spend limit's reset (a key's own, a guardrail's): never, then each window. */
export function ResetOptions() {
  return (
    <>
      <option value="">never</option>
      <option value="daily">daily</option>
      <option value="weekly">weekly</option>
      <option value="monthly">monthly</option>
    </>
  )
}

export interface Member {
  id: string
  email: string
  first_name: string | null
  last_name: string | null
  role: 'org:admin' | 'org:member'
  disabled: boolean
}

/** How a member is called on a page: their name, else their e-mail, else their id. */
export const memberName = (m: Member) => [m.first_name, m.last_name].filter(Boolean).join(' ') || m.email || m.id

/** The account's members not among those `taken` names (by user id), as options to pick one from. */
export const membersOutside = (everyone: readonly Member[] | undefined, taken: readonly { user_id: string }[] = []) =>
  (everyone ?? [])
    .filter((m) => !taken.some((t) => t.user_id === m.id))
    .map((m) => ({ value: m.id, text: memberName(m) }))

/** The account's members (one read, shared by every part of the page that names them). */
export function useMembers(enabled = true) {
  return useQuery({
    queryKey: ['org-members'],
    queryFn: () => api<{ data: Member[] }>('organization/members?limit=100'),
    enabled,
  })
}

/** Models typed as `a, b`: each named once, blanks dropped. */
export const modelList = (typed: string) =>
  typed
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean)

/** A form that picks one of `options` (by value) and acts on it; cleared once the action succeeds. */
export function Choose({
  label,
  field,
  options,
  action,
  act,
  busy,
}: {
  /** The form's name for assistive technology. */
  label: string
  /** The select's label. */
  field: string
  options: { value: string; text: string }[]
  /** The submit button's text. */
  action: string
  act: (value: string) => Promise<boolean>
  busy: boolean
}) {
  const [chosen, setChosen] = useState('')
  const submit = (e: FormEvent) => {
    e.preventDefault()
    void act(chosen).then((ok) => ok && setChosen(''))
  }
  return (
    <form className="filters" onSubmit={submit} aria-label={label}>
      <label>
        {field}{' '}
        <select value={chosen} onChange={(e) => setChosen(e.target.value)} required>
          <option value="">choose…</option>
          {options.map((o) => (
            <option key={o.value} value={o.value}>
              {o.text}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" disabled={busy}>
        {action}
      </button>
    </form>
  )
}
