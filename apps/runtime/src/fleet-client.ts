import { Pool, type Dispatcher } from 'undici'
import {
  EgressResult,
  HeartbeatResponse,
  HOST_ID_HEADER,
  HostMcpServers,
  JoinResponse,
  SubagentStarted,
  SessionIds,
  SessionItems,
  SNAPSHOT_GENERATION_HEADER,
  type EgressRequest,
  type HeartbeatRequest,
  type JoinRequest,
  type McpToolsSeen,
  type StartSubagent,
  type SecretEgress,
} from '@roster/protocol'

// The runtime host's side of the fleet: it joins through the API with the fleet's credential, is
// given its own, and from then on beats and asks the API (and only the API: a host holds no
// database credential and no master key) for what it must keep off the host: its interns'
// sessions and workspace snapshots, and the requests that carry their secrets. Every call about an
// intern names the placement it is made under; the API refuses it for a placement the record no
// longer holds.

export class FleetError extends Error {
  override name = 'FleetError'
  constructor(
    message: string,
    readonly status: number,
    readonly code?: string,
  ) {
    super(message)
  }
}

export class FleetClient implements SecretEgress {
  private readonly pool: Pool
  /** What joining gave this host (undefined until it has joined). */
  membership?: JoinResponse
  /** Until when the last acknowledged heartbeat lets this host answer for its interns (ms since the epoch). */
  private leaseUntil = 0
  /** The placement each intern is run under here (the generation sent with calls about it). */
  readonly generations = new Map<string, number>()

  constructor(
    /** Roster's API (its /api/v1 base URL; the fleet's API is beside it, at /internal/v1). */
    apiUrl: string,
    private readonly hostId: string,
    private readonly fleetToken: string,
  ) {
    const url = new URL(apiUrl)
    this.pool = new Pool(url.origin, { connections: 16, headersTimeout: 30_000, bodyTimeout: 60_000 })
  }

  /** Whether this host may answer for its interns now: it has heard from the record within its lease. */
  get verified(): boolean {
    return Date.now() < this.leaseUntil
  }

  /** The host's credential (given at join), which callers of its control API must present. */
  get token(): string | undefined {
    return this.membership?.token
  }

  /** The interns' default model the API named at the last join (kept across a lapse: it is the API's setting). */
  internDefaultModel: string | undefined
  /** Whether the API searches the web for interns (it has a search engine), as it said at the last join. */
  internWebSearch = false

  async join(req: Omit<JoinRequest, 'id'>): Promise<JoinResponse> {
    const res = await this.request(
      'POST',
      '/internal/v1/fleet/join',
      { ...req, id: this.hostId },
      `Bearer ${this.fleetToken}`,
    )
    this.membership = JoinResponse.parse(await json(res))
    this.internDefaultModel = this.membership.intern_default_model ?? undefined
    this.internWebSearch = this.membership.intern_web_search ?? false
    this.leaseUntil = Date.now() + this.membership.lease_ms
    return this.membership
  }

  /** One heartbeat; an acknowledged one renews the lease (from when it was sent, not answered). */
  async heartbeat(req: HeartbeatRequest): Promise<HeartbeatResponse> {
    const sent = Date.now()
    const res = await this.request('POST', '/internal/v1/fleet/heartbeat', req)
    const answer = HeartbeatResponse.parse(await json(res))
    if (answer.state !== 'dead') this.leaseUntil = sent + this.membership!.lease_ms
    else this.leaseUntil = 0
    return answer
  }

  /** This host asks to be drained (it is shutting down with its drain setting). */
  async drainSelf(): Promise<void> {
    await json(await this.request('POST', '/internal/v1/fleet/drain', {}))
  }

  forget() {
    this.leaseUntil = 0
    this.membership = undefined
  }

  /** The sessions the intern has in the record. */
  async sessionIds(internId: string): Promise<Set<string>> {
    const res = await this.request(
      'GET',
      `/internal/v1/interns/${internId}/sessions?generation=${this.generation(internId)}`,
    )
    return new Set(SessionIds.parse(await json(res)).sessions)
  }

  /** A session's items, as the record keeps them. */
  async loadSession(internId: string, sessionId: string): Promise<Record<string, unknown>[]> {
    const res = await this.request(
      'GET',
      `/internal/v1/interns/${internId}/sessions/${encodeURIComponent(sessionId)}?generation=${this.generation(internId)}`,
    )
    return SessionItems.parse(await json(res)).items
  }

  /** Appends items to a session, numbered from `from` (a retry appends nothing twice). */
  async appendSession(
    internId: string,
    sessionId: string,
    from: number,
    items: Record<string, unknown>[],
  ): Promise<void> {
    await json(
      await this.request('POST', `/internal/v1/interns/${internId}/sessions/${encodeURIComponent(sessionId)}/entries`, {
        generation: this.generation(internId),
        from,
        items,
      }),
    )
  }

  /** The intern's enabled MCP servers (their headers may name its secrets, filled in by the egress). */
  async mcpServers(internId: string): Promise<HostMcpServers['servers']> {
    const res = await this.request(
      'GET',
      `/internal/v1/interns/${internId}/mcp-servers?generation=${this.generation(internId)}`,
    )
    return HostMcpServers.parse(await json(res)).servers
  }

  /** What was found on one of them (its tools, what went wrong), for the intern's page. */
  async reportMcpTools(internId: string, serverId: string, seen: Omit<McpToolsSeen, 'generation'>): Promise<void> {
    await json(
      await this.request('POST', `/internal/v1/interns/${internId}/mcp-servers/${serverId}/tools`, {
        generation: this.generation(internId),
        ...seen,
      }),
    )
  }

  /** Starts a subagent of the intern's (a turn of its own, queued); refused when its queue is full or its model not served. */
  async startSubagent(internId: string, req: Omit<StartSubagent, 'generation'>): Promise<SubagentStarted> {
    const res = await this.request('POST', `/internal/v1/interns/${internId}/subagents`, {
      generation: this.generation(internId),
      ...req,
    })
    return SubagentStarted.parse(await json(res))
  }

  /** Keeps a workspace snapshot (a gzipped tar) as the intern's latest. */
  async putSnapshot(internId: string, bytes: Buffer): Promise<{ sha256: string; size: number }> {
    const res = await this.request('PUT', `/internal/v1/interns/${internId}/snapshot`, bytes, undefined, {
      'content-type': 'application/gzip',
      [SNAPSHOT_GENERATION_HEADER]: String(this.generation(internId)),
    })
    return (await json(res)) as { sha256: string; size: number }
  }

  /** The intern's latest snapshot, or undefined when it has none. */
  async getSnapshot(internId: string): Promise<Buffer | undefined> {
    const res = await this.request(
      'GET',
      `/internal/v1/interns/${internId}/snapshot?generation=${this.generation(internId)}`,
    )
    if (res.statusCode === 204) {
      await res.body.dump()
      return undefined
    }
    if (res.statusCode !== 200) await json(res)
    return Buffer.from(await res.body.arrayBuffer())
  }

  /** A request of the intern's that carries secrets (SecretEgress): made by the API's egress, never here. */
  async send(
    internId: string,
    args: Omit<EgressRequest, 'method'> & { method?: string },
    signal?: AbortSignal,
  ): Promise<EgressResult> {
    try {
      const res = await this.request(
        'POST',
        `/internal/v1/interns/${internId}/egress?generation=${this.generation(internId)}`,
        { ...args, method: args.method ?? 'GET' },
        undefined,
        undefined,
        signal,
      )
      return EgressResult.parse(await json(res))
    } catch (err) {
      return { error: `the egress could not be reached: ${(err as Error).message}` }
    }
  }

  async close() {
    await this.pool.close()
  }

  private generation(internId: string): number {
    const g = this.generations.get(internId)
    if (g === undefined) throw new FleetError(`intern ${internId} is not placed on this host`, 409, 'placement_stale')
    return g
  }

  private async request(
    method: string,
    path: string,
    body?: unknown,
    authorization?: string,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<Dispatcher.ResponseData> {
    if (!authorization && !this.membership)
      throw new FleetError('this host has not joined the fleet', 503, 'placement_unverified')
    const buffer = Buffer.isBuffer(body)
    try {
      return await this.pool.request({
        method: method as 'GET',
        path,
        headers: {
          authorization: authorization ?? `Bearer ${this.membership!.token}`,
          [HOST_ID_HEADER]: this.hostId,
          ...(body !== undefined && !buffer ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        body: body === undefined ? undefined : buffer ? body : JSON.stringify(body),
        signal,
      })
    } catch (cause) {
      throw new FleetError(`the API could not be reached: ${(cause as Error).message}`, 503)
    }
  }
}

/** A JSON answer, or its refusal as a FleetError (with the API's code). */
async function json(res: Dispatcher.ResponseData): Promise<unknown> {
  const text = await res.body.text()
  let body: unknown
  try {
    body = text ? JSON.parse(text) : {}
  } catch {
    body = { message: text.slice(0, 200) }
  }
  if (res.statusCode >= 400) {
    const { error, message } = (body ?? {}) as { error?: string; message?: string }
    throw new FleetError(message ?? `the API answered ${res.statusCode}`, res.statusCode, error)
  }
  return body
}
