import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  isSecret,
  secretDigest,
  EgressRequest,
  HeartbeatRequest,
  HOST_ID_HEADER,
  InternId,
  JoinRequest,
  McpToolsSeen,
  SessionAppend,
  StartSubagent,
  type SubagentStarted,
  type HostMcpServers,
  SNAPSHOT_GENERATION_HEADER,
} from '@roster/shared'
import { fleetTimes, hostCredential, isHostCredential } from '@roster/shared/fleet'
import {
  appendSessionEntries,
  hostRecord,
  sessionIds,
  sessionItems,
  FleetConflict,
  isPlaced,
  heartbeat,
  joinHost,
  drainHost,
  admitTurn,
  mcpServersOf,
  recordMcpTools,
  type HostRow,
} from '@roster/shared/repositories'
import { randomBytes } from 'node:crypto'
import { findModel } from '@roster/gateway'
import type { AppDeps } from '../deps.js'

// The fleet's API, for runtime hosts only (not part of the public API, and outside /api/v1): hosts
// join with the fleet's credential and are given their own for the epoch; with it they beat, and
// ask, for the interns placed on them and only those, to keep their sessions and workspace
// snapshots and to send the requests that carry secrets. Every call about an intern names the
// placement it is made under, and is refused unless the record still places the intern there.

declare module 'fastify' {
  interface FastifyRequest {
    runtimeHost?: { id: string; epoch: number }
  }
}

const InternParams = z.object({ id: z.uuid() })
const SessionParams = z.object({ id: z.uuid(), session: z.string().min(1).max(256) })
const McpServerParams = z.object({ id: z.uuid(), server: z.uuid() })
const GenerationQuery = z.object({ generation: z.coerce.number().int().min(0) })

const refuse = (reply: FastifyReply, status: number, error: string, message: string) =>
  reply.code(status).send({ error, message })
const bearer = (req: FastifyRequest) => /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1]

export const fleetRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    const fleet = deps.fleet
    const api = app.withTypeProvider<ZodTypeProvider>()
    // Hosts' records, briefly cached: every call a host makes is checked against its epoch.
    const hosts = new Map<string, { row: HostRow | undefined; at: number }>()
    const hostRow = async (id: string) => {
      const cached = hosts.get(id)
      if (cached && Date.now() - cached.at < 1_000) return cached.row
      const row = await hostRecord(deps.db, id)
      hosts.set(id, { row, at: Date.now() })
      if (hosts.size > 10_000) hosts.delete(hosts.keys().next().value!)
      return row
    }

    /**
     * A host's own calls: its id and the credential of its current epoch. A host the record declared
     * dead may still beat (to be told so, and join again), and do nothing else.
     */
    const authenticate = (deadMayCall: boolean) => async (req: FastifyRequest, reply: FastifyReply) => {
      if (!fleet)
        return refuse(
          reply,
          503,
          'unavailable',
          'this API holds no fleet (VAULT_MASTER_KEY and RUNTIME_TOKEN are needed)',
        )
      const id = req.headers[HOST_ID_HEADER]
      const row = typeof id === 'string' ? await hostRow(id) : undefined
      if (
        !row ||
        (row.state === 'dead' && !deadMayCall) ||
        !isHostCredential(fleet.credentialKey, row.id, row.epoch, bearer(req))
      ) {
        return refuse(
          reply,
          401,
          'unauthorized',
          'a runtime host of the fleet, with the credential it was given when it joined, is required',
        )
      }
      req.runtimeHost = { id: row.id, epoch: row.epoch }
    }
    const asHost = authenticate(false)
    /** Calls about an intern: only for one the record places on the calling host under the generation named. */
    const placed = async (req: FastifyRequest, reply: FastifyReply, generation: number) => {
      const { id } = req.params as { id: string }
      // May run before the route's own validation (for snapshots): checked here too.
      if (!InternId.safeParse(id).success) return refuse(reply, 400, 'bad_request', 'an intern id is a UUID')
      if (!Number.isSafeInteger(generation) || generation < 0)
        return refuse(reply, 400, 'bad_request', 'the placement generation is a whole number')
      if (!(await isPlaced(deps.db, id, req.runtimeHost!.id, generation))) {
        return refuse(
          reply,
          409,
          'placement_stale',
          `intern ${id} is not placed on ${req.runtimeHost!.id} under generation ${generation}`,
        )
      }
    }
    /** The same, for a host's reads that name the generation in their query. */
    const placedByQuery = (req: FastifyRequest, reply: FastifyReply) =>
      placed(req, reply, (req.query as { generation: number }).generation)

    // Credentials are checked before bodies are read: a caller without one learns nothing from a 400.
    const asJoiner = async (req: FastifyRequest, reply: FastifyReply) => {
      if (!fleet)
        return refuse(
          reply,
          503,
          'unavailable',
          'this API holds no fleet (VAULT_MASTER_KEY and RUNTIME_TOKEN are needed)',
        )
      if (!isSecret(bearer(req), secretDigest(fleet.joinToken)))
        return refuse(reply, 401, 'unauthorized', "joining the fleet needs the fleet's credential (RUNTIME_TOKEN)")
    }

    api.post(
      '/internal/v1/fleet/join',
      { schema: { hide: true, body: JoinRequest }, onRequest: asJoiner },
      async (req, reply) => {
        if (!fleet) return refuse(reply, 503, 'unavailable', 'this API holds no fleet')
        try {
          const row = await joinHost(deps.db, req.body, fleetTimes(deps.config))
          hosts.delete(row.id)
          req.log.info(
            { host: row.id, address: row.address, epoch: row.epoch, capacity: row.capacity },
            'a runtime host joined the fleet',
          )
          return {
            token: hostCredential(fleet.credentialKey, row.id, row.epoch),
            epoch: row.epoch,
            // The lease runs out well before the record would declare the host dead: a host cut off stops answering first.
            lease_ms: Math.floor((deps.config.FLEET_DEAD_AFTER_MS * 2) / 3),
            heartbeat_ms: deps.config.FLEET_HEARTBEAT_MS,
            intern_default_model: deps.internDefaultModel,
            intern_web_search: Boolean(
              deps.config.SEARXNG_URL ||
              deps.config.BRAVE_SEARCH_API_KEY ||
              deps.config.TAVILY_API_KEY ||
              deps.config.EXA_API_KEY,
            ),
          }
        } catch (err) {
          if (err instanceof FleetConflict) return refuse(reply, 409, 'conflict', err.message)
          throw err
        }
      },
    )

    api.post(
      '/internal/v1/fleet/heartbeat',
      { schema: { hide: true, body: HeartbeatRequest }, onRequest: authenticate(true) },
      async (req) => {
        const host = req.runtimeHost!
        return heartbeat(deps.db, host.id, host.epoch, req.body)
      },
    )

    // A host shutting down with its drain setting asks to be drained itself.
    api.post('/internal/v1/fleet/drain', { schema: { hide: true }, onRequest: asHost }, async (req) => {
      hosts.delete(req.runtimeHost!.id)
      return { draining: await drainHost(deps.db, req.runtimeHost!.id) }
    })

    // Which sessions exist: a host asks once per placement, and reads only those from the record (a new one has nothing to read).
    api.get(
      '/internal/v1/interns/:id/sessions',
      {
        schema: { hide: true, params: InternParams, querystring: GenerationQuery },
        onRequest: asHost,
        preHandler: placedByQuery,
      },
      async (req) => {
        return { sessions: await sessionIds(deps.db, req.params.id) }
      },
    )

    api.get(
      '/internal/v1/interns/:id/sessions/:session',
      {
        schema: { hide: true, params: SessionParams, querystring: GenerationQuery },
        onRequest: asHost,
        preHandler: placedByQuery,
      },
      async (req) => {
        return { items: await sessionItems(deps.db, req.params.id, req.params.session) }
      },
    )

    api.post(
      '/internal/v1/interns/:id/sessions/:session/entries',
      {
        schema: { hide: true, params: SessionParams, body: SessionAppend },
        bodyLimit: 16 * 1024 * 1024,
        onRequest: asHost,
      },
      async (req, reply) => {
        const { from, items, generation } = req.body
        const host = req.runtimeHost!.id
        const stillPlaced = await appendSessionEntries(
          deps.db,
          { internId: req.params.id, sessionId: req.params.session, hostId: host, generation },
          from,
          items,
        )
        if (!stillPlaced)
          return refuse(
            reply,
            409,
            'placement_stale',
            `intern ${req.params.id} is not placed on ${host} under generation ${generation}`,
          )
        return { appended: items.length }
      },
    )

    // Snapshots travel as their bytes (a gzipped tar), up to SNAPSHOT_MAX_MB.
    const snapshotLimit = deps.config.SNAPSHOT_MAX_MB * 1024 * 1024
    const tooLargeMessage = (size: number) =>
      `a workspace snapshot is at most ${deps.config.SNAPSHOT_MAX_MB} MiB compressed (SNAPSHOT_MAX_MB); this one is ${(size / 1024 / 1024).toFixed(1)} MiB: the intern's files since its last kept snapshot would not survive its host (remove large files from its workspace, or raise SNAPSHOT_MAX_MB)`
    const tooLarge = async (req: FastifyRequest, reply: FastifyReply) => {
      const size = Number(req.headers['content-length'])
      if (size > snapshotLimit) return refuse(reply, 413, 'snapshot_too_large', tooLargeMessage(size))
    }
    app.addContentTypeParser('application/gzip', { parseAs: 'buffer', bodyLimit: snapshotLimit }, (_req, body, done) =>
      done(null, body),
    )
    api.put(
      '/internal/v1/interns/:id/snapshot',
      {
        schema: { hide: true, params: InternParams },
        bodyLimit: snapshotLimit,
        // Both checked before the body is read: a stale host's upload is refused before its bytes arrive.
        onRequest: [
          asHost,
          tooLarge,
          (req, reply) => placed(req, reply, Number(req.headers[SNAPSHOT_GENERATION_HEADER])),
        ],
      },
      async (req, reply) => {
        if (!Buffer.isBuffer(req.body))
          return refuse(reply, 415, 'bad_request', 'a snapshot is sent as application/gzip')
        const kept = await deps.snapshots.put(req.params.id, Number(req.headers[SNAPSHOT_GENERATION_HEADER]), req.body)
        deps.metrics?.snapshotBytes.inc({ direction: 'in' }, kept.size)
        return kept
      },
    )
    api.get(
      '/internal/v1/interns/:id/snapshot',
      {
        schema: { hide: true, params: InternParams, querystring: GenerationQuery },
        onRequest: asHost,
        preHandler: placedByQuery,
      },
      async (req, reply) => {
        const snapshot = await deps.snapshots.get(req.params.id)
        if (!snapshot) return reply.code(204).send()
        deps.metrics?.snapshotBytes.inc({ direction: 'out' }, snapshot.size)
        return reply.type('application/gzip').header('x-roster-sha256', snapshot.sha256).send(snapshot.bytes)
      },
    )

    api.post(
      '/internal/v1/interns/:id/egress',
      {
        schema: { hide: true, params: InternParams, querystring: GenerationQuery, body: EgressRequest },
        bodyLimit: 9 * 1024 * 1024,
        onRequest: asHost,
        preHandler: placedByQuery,
      },
      async (req, reply) => {
        if (!deps.egress)
          return refuse(reply, 503, 'unavailable', 'this API releases no secrets (it has no VAULT_MASTER_KEY)')
        // A host that gave up on the request (its tool's timeout) ends it here too.
        const gone = new AbortController()
        reply.raw.once('close', () => reply.raw.writableFinished || gone.abort())
        return deps.egress.send(req.params.id, req.body, gone.signal)
      },
    )

    // A subagent the intern's turn starts: a turn of its own (queued like every turn no person
    // typed), with its model and budget; its end is told in the session that started it.
    api.post(
      '/internal/v1/interns/:id/subagents',
      {
        schema: { hide: true, params: InternParams, body: StartSubagent },
        onRequest: asHost,
        preHandler: (req, reply) => placed(req, reply, (req.body as StartSubagent).generation),
      },
      async (req, reply): Promise<SubagentStarted | undefined> => {
        const b = req.body
        if (b.model && !findModel(deps.catalogue, b.model))
          return refuse(reply, 400, 'bad_request', `the model ${b.model} is not served here (GET /api/v1/models)`)
        const sessionId = `subagent-${randomBytes(6).toString('hex')}`
        const admitted = await admitTurn(
          deps.db,
          {
            internId: req.params.id,
            source: 'subagent',
            sessionId,
            prompt: b.prompt,
            approvalMode: b.approval_mode,
            parentSessionId: b.session_id,
            model: b.model,
            budgetUsd: b.budget_usd,
          },
          deps.config.INTERN_TURN_QUEUE,
        )
        if (admitted.kind !== 'queued')
          return refuse(
            reply,
            409,
            'busy',
            `no subagent was started: the intern has INTERN_TURN_QUEUE (${deps.config.INTERN_TURN_QUEUE}) turns waiting already`,
          )
        deps.afterCommit.outboxWritten()
        return { turn_id: admitted.id, session_id: sessionId }
      },
    )

    // The intern's MCP servers, as its host connects to them at a turn's start, and what it found there.
    api.get(
      '/internal/v1/interns/:id/mcp-servers',
      {
        schema: { hide: true, params: InternParams, querystring: GenerationQuery },
        onRequest: asHost,
        preHandler: placedByQuery,
      },
      async (req): Promise<HostMcpServers> => ({
        servers: (await mcpServersOf(deps.db, req.params.id, true)).map((s) => ({
          id: s.id,
          name: s.name,
          url: s.url,
          headers: s.headers as Record<string, string>,
        })),
      }),
    )
    api.post(
      '/internal/v1/interns/:id/mcp-servers/:server/tools',
      {
        schema: { hide: true, params: McpServerParams, body: McpToolsSeen },
        bodyLimit: 1024 * 1024,
        onRequest: asHost,
        preHandler: (req, reply) => placed(req, reply, (req.body as McpToolsSeen).generation),
      },
      async (req) => {
        await recordMcpTools(deps.db, req.params.id, req.params.server, req.body.tools, req.body.error)
        return { recorded: true }
      },
    )
  }
