// Calls to Roster's API from the console: relative to the console's own address (so a proxy's path
// prefix is kept), with the session's cookie and the console's header (docs/console.md); the key
// itself is sent once, to sign in, and never kept.
import type { InternView } from '@roster/protocol'

/** The API's base, beside /console/ wherever the console is served. */
export const apiBase = new URL('../api/v1/', window.location.href).toString()

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason?: string,
  ) {
    super(message)
  }
}

/** A call with the session: the console's header marks it as the console's (changes need it). */
export function call(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(new URL(path, apiBase), {
    ...init,
    credentials: 'same-origin',
    headers: {
      'x-roster-console': '1',
      ...(init.body ? { 'content-type': 'application/json' } : {}),
      ...init.headers,
    },
  })
}

/** Told when a call finds the session over (expired, signed out elsewhere, its key disabled). */
export const SESSION_ENDED = 'roster:session-ended'

/** The error a refused call's body describes. */
export async function refusal(res: Response): Promise<ApiError> {
  if (res.status === 401) window.dispatchEvent(new Event(SESSION_ENDED))
  const body = (await res.json().catch(() => ({}))) as { error?: { message?: string; metadata?: { reason?: string } } }
  return new ApiError(res.status, body.error?.message ?? `HTTP ${res.status}`, body.error?.metadata?.reason)
}

export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await call(path, init)
  if (!res.ok) throw await refusal(res)
  if (res.status === 204) return undefined as T
  return (await res.json()) as T
}

/** Reads a server-sent-events body, one `(event, data)` per event, until it ends or `signal` aborts. */
export async function readEvents(res: Response, onEvent: (event: string, data: string) => void) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer += value
    let cut: number
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 2)
      let event = 'message'
      const data: string[] = []
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim()
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
      }
      if (data.length) onEvent(event, data.join('\n'))
    }
  }
}

export interface Session {
  /** A key's kind, or the operator (signed in with OPERATOR_TOKEN: the fleet page). */
  kind: 'user' | 'organization' | 'management' | 'intern' | 'operator'
  workspace_id: string | null
  /** The workspace's name, as its members know it (null: the operator). */
  workspace_name: string | null
  expires_at: string
  /** What an intern without a model of its own runs (null: the server serves none). */
  intern_default_model: string | null
  /** The person signed in through single sign-on, and their role (null: a key's session, or the operator's). */
  member: { id: string; email: string; role: 'admin' | 'member' } | null
}

/** An intern as the API answers it (the contract's own type: its status is one of the spec's). */
export type Intern = InternView
