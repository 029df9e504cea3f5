import { type Dispatcher } from 'undici'
import type { Db } from '../db.js'
import { injectTrace, inSpan, SpanKind, tracing } from '@roster/platform'
import { readEventStream } from '@roster/platform'
import {
  HostErrorBody,
  HostedIntern,
  RunEvent,
  SandboxCommandResult,
  SkillsFound,
  Steered,
  type SkillInstall,
  type SandboxCommand,
  type ChatRequest,
  type InternSpec,
  type WorkspaceFilePut,
} from '@roster/protocol'
import { HostHttp, RuntimeUnavailableError, type HostAddress } from './host-http.js'

export type { HostAddress } from './host-http.js'
import { placementOf, type PlacedOn } from '../repositories/interns.js'

// The runtime hosts as the workers and the API call them: each call goes to the host the intern is
// placed on, with that host's credential for its epoch and the placement's generation (a host
// refuses a call for a placement it no longer holds). One keep-alive pool per host (host-http.ts).

export { RuntimeUnavailableError, HostRefusal } from './host-http.js'

/** What a chat call came to: the run's events, a steer, or the host's refusal. */
export type ChatOutcome =
  | { kind: 'stream'; events: AsyncIterable<RunEvent> }
  | { kind: 'steered'; session_id: string }
  | { kind: 'refused'; status: number; error: HostErrorBody }

export class FleetDriver {
  private readonly http: HostHttp

  constructor(
    private readonly db: Db | undefined,
    /** Host credentials are derived from it; without it no host can be called. */
    credentialKey: Buffer | undefined,
    options: { timeoutMs?: number } = {},
  ) {
    this.http = new HostHttp(credentialKey, options)
  }

  /** Where the record places an intern now. */
  placement(internId: string): Promise<(PlacedOn & { status: string }) | undefined> {
    if (!this.db) return Promise.resolve(undefined)
    return placementOf(this.db, internId)
  }

  async configure(at: PlacedOn, internId: string, spec: InternSpec) {
    return (await this.http.call(at, 'PUT', `/v1/interns/${internId}`, spec, at.generation)) as { written: boolean }
  }

  async start(at: PlacedOn, internId: string) {
    return (await this.http.call(at, 'POST', `/v1/interns/${internId}/start`, undefined, at.generation)) as {
      started: boolean
    }
  }

  /** A command in one of the gateway's sandboxes on a host (`openrouter:bash`). */
  async sandboxCommand(at: HostAddress, key: string, command: SandboxCommand): Promise<SandboxCommandResult> {
    return SandboxCommandResult.parse(
      await this.http.call(at, 'POST', `/v1/sandboxes/${encodeURIComponent(key)}/commands`, command),
    )
  }

  /** A gateway sandbox discarded, its files with it. */
  async discardSandbox(at: HostAddress, key: string) {
    await this.http.call(at, 'DELETE', `/v1/sandboxes/${encodeURIComponent(key)}`)
  }

  async stop(at: PlacedOn, internId: string) {
    await this.http.call(at, 'POST', `/v1/interns/${internId}/stop`, undefined, at.generation)
  }

  /** Keeps a copy of the intern's workspace before a teardown; false when there is nothing to keep. */
  async archive(at: PlacedOn, internId: string) {
    return (await this.http.call(at, 'POST', `/v1/interns/${internId}/archive`, undefined, at.generation)) as {
      archived: boolean
    }
  }

  /** Puts a file into the intern's workspace (its directories made); where it landed and its size. */
  async putFile(at: PlacedOn, internId: string, path: string, bytes: Uint8Array) {
    const body: WorkspaceFilePut = { path, content_base64: Buffer.from(bytes).toString('base64') }
    return (await this.http.call(at, 'PUT', `/v1/interns/${internId}/files`, body, at.generation)) as {
      path: string
      bytes: number
    }
  }

  /** The intern's skills (folders of its workspace), and its folders that are not skills. */
  async skills(at: PlacedOn, internId: string): Promise<SkillsFound> {
    return SkillsFound.parse(
      await this.http.call(at, 'GET', `/v1/interns/${internId}/skills`, undefined, at.generation),
    )
  }

  /** Installs a skill's folder at once (in place of any of that name); the skill as its host read it. */
  async installSkill(at: PlacedOn, internId: string, name: string, install: SkillInstall) {
    return (await this.http.call(
      at,
      'PUT',
      `/v1/interns/${internId}/skills/${encodeURIComponent(name)}`,
      install,
      at.generation,
    )) as { name: string; description: string }
  }

  async removeSkill(at: PlacedOn, internId: string, name: string) {
    await this.http.call(
      at,
      'DELETE',
      `/v1/interns/${internId}/skills/${encodeURIComponent(name)}`,
      undefined,
      at.generation,
    )
  }

  async remove(at: HostAddress, internId: string) {
    await this.http.call(at, 'DELETE', `/v1/interns/${internId}`)
  }

  /** Whether the intern answers healthy on its own hostname, at its host. */
  async healthy(at: HostAddress, hostname: string): Promise<boolean> {
    const check = async () => {
      try {
        const res = await this.http.pool(at.address).request({
          method: 'GET',
          path: '/healthz',
          headers: injectTrace({ 'x-forwarded-host': hostname }),
        })
        await res.body.dump()
        return res.statusCode === 200
      } catch {
        return false
      }
    }
    if (tracing.on)
      return inSpan(
        'runtime GET /healthz',
        { kind: SpanKind.CLIENT, attributes: this.http.attributes(at, 'GET', '/healthz') },
        check,
      )
    return check()
  }

  /** The interns a host has, and whether each runs. */
  async hosted(at: HostAddress): Promise<Map<string, HostedIntern>> {
    const { data } = (await this.http.call(at, 'GET', '/v1/interns')) as { data: unknown[] }
    return new Map(data.map((d) => HostedIntern.parse(d)).map((i) => [i.id, i]))
  }

  /**
   * A prompt or a reply for an intern, at its host: its run's events as they come (a steer, or the
   * host's refusal, answered as such). `headersTimeoutMs`: how long the host may take to take it.
   */
  async chat(
    at: PlacedOn,
    internId: string,
    body: ChatRequest,
    signal: AbortSignal,
    headersTimeoutMs: number,
  ): Promise<ChatOutcome> {
    let res: Dispatcher.ResponseData
    try {
      res = await this.http.pool(at.address).request({
        method: 'POST',
        path: `/v1/interns/${internId}/chat`,
        headers: injectTrace(this.http.headers(at, at.generation, true)),
        body: JSON.stringify(body),
        signal,
        headersTimeout: headersTimeoutMs,
        bodyTimeout: 0,
      })
    } catch (cause) {
      if ((cause as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT') throw cause
      throw new RuntimeUnavailableError(`runtime host ${at.hostId} is unreachable`, { cause })
    }
    if (res.statusCode === 200)
      return { kind: 'stream', events: readEventStream(res.body, (data) => RunEvent.parse(JSON.parse(data))) }
    const json = await res.body.json().catch(() => undefined)
    if (res.statusCode === 202) return { kind: 'steered', session_id: Steered.parse(json).session_id }
    const error = HostErrorBody.safeParse(json)
    if (!error.success) throw new RuntimeUnavailableError(`runtime host ${at.hostId} answered ${res.statusCode}`)
    return { kind: 'refused', status: res.statusCode, error: error.data }
  }

  close() {
    return this.http.close()
  }
}
