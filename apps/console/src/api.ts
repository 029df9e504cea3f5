// Calls to Roster's API from the console: relative to the console's own address (so a proxy's path
// prefix is kept), with the session's cookie and the console's header (docs/console.md); the key
// itself is sent once, to sign in, and never kept.

/** The API's base, beside /console/ wherever the console is served. */
export const apiBase = new URL('../api/v1/', window.location.href).toString()

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(new URL(path, apiBase), {
    ...init,
    credentials: 'same-origin',
    headers: {
      'x-roster-console': '1',
      ...(init.body ? { 'content-type': 'application/json' } : {}),
      ...init.headers,
    },
  })
  if (res.status === 204) return undefined as T
  const body = (await res.json().catch(() => ({}))) as { error?: { message?: string } }
  if (!res.ok) throw new ApiError(res.status, body.error?.message ?? `HTTP ${res.status}`)
  return body as T
}

export interface Session {
  kind: string
  workspace_id: string
  expires_at: string
}

export interface Intern {
  id: string
  name: string
  status: string
  last_failure_message: string | null
}
