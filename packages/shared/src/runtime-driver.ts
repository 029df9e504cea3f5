// The runtime behind provisioning: a small interface, so a container orchestrator can replace the
// local runtime host (apps/runtime) without touching the provisioning flow.

export interface RuntimeSpec {
  hostname: string
  name: string
  instructions: string | null
  model: string | null
  /** Credential the runtime uses to call back into Roster; read from the intern's vault. */
  token: string
}

export interface RuntimeDriver {
  /** Writes the intern's runtime configuration; a no-op when it is unchanged. */
  configure(internId: string, spec: RuntimeSpec): Promise<{ written: boolean }>
  /** Starts the intern; a no-op when it already runs. */
  start(internId: string): Promise<{ started: boolean }>
  /** Whether the intern answers healthy on its own hostname. */
  healthy(hostname: string): Promise<boolean>
  stop(internId: string): Promise<void>
  remove(internId: string): Promise<void>
}

/** A failure worth retrying: the runtime could not be reached or answered 5xx. */
export class RuntimeUnavailableError extends Error {
  override name = 'RuntimeUnavailableError'
}

/** Talks to apps/runtime over HTTP. */
export class HttpRuntimeDriver implements RuntimeDriver {
  constructor(private readonly baseUrl: string, private readonly timeoutMs = 5_000) {}

  async configure(internId: string, spec: RuntimeSpec) {
    return (await this.call('PUT', `/v1/interns/${internId}`, spec)) as { written: boolean }
  }

  async start(internId: string) {
    return (await this.call('POST', `/v1/interns/${internId}/start`)) as { started: boolean }
  }

  async healthy(hostname: string): Promise<boolean> {
    try {
      const res = await fetch(new URL('/healthz', this.baseUrl), {
        headers: { 'x-forwarded-host': hostname },
        signal: AbortSignal.timeout(this.timeoutMs),
      })
      await res.body?.cancel()
      return res.status === 200
    } catch {
      return false
    }
  }

  async stop(internId: string) {
    await this.call('POST', `/v1/interns/${internId}/stop`)
  }

  async remove(internId: string) {
    await this.call('DELETE', `/v1/interns/${internId}`)
  }

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    let res: Response
    try {
      res = await fetch(new URL(path, this.baseUrl), {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      })
    } catch (cause) {
      throw new RuntimeUnavailableError(`runtime host at ${this.baseUrl} is unreachable`, { cause })
    }
    const text = await res.text()
    if (res.status >= 500) throw new RuntimeUnavailableError(`runtime host answered ${res.status} to ${method} ${path}`)
    if (!res.ok) throw new Error(`runtime host refused ${method} ${path}: ${res.status} ${text.slice(0, 200)}`)
    return text ? JSON.parse(text) : {}
  }
}
