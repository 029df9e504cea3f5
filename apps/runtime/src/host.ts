import Fastify, { LogController, type FastifyInstance, type FastifyReply } from 'fastify'
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { createHash, timingSafeEqual } from 'node:crypto'
import { join } from 'node:path'
import { z } from 'zod'
import { randomUUID } from 'node:crypto'
import { createDb, cutStalledBody, fastifyListenerOptions, guardConnections, LocalVault, loggerOptions, logsEachRequest, maxConnections, observeHttp, requestLogger, settledWithin, traceHttpServer, tracing, type Metrics, type RuntimeConfig } from '@roster/shared'
import { Egress } from './egress.js'
import { EgressProxies } from './egress-proxy.js'
import { chooseEgressForwarder, commandRunner, confineCommands } from './sandbox.js'
import { ownWorkspace, prepareConfinement, reachableBySandboxUser } from './confinement.js'
import { SessionStore } from './agent/session-store.js'
import { runAgentTurn } from './agent/agent-turn.js'
import { InternDaemon, type RunEvent, type RunStream } from './agent/daemon.js'

/** Connections one intern's egress proxy holds at most (its commands' HTTP requests and tunnels). */
const EGRESS_CONNECTIONS_PER_INTERN = 256

const Spec = z.object({
  hostname: z.string().min(1),
  name: z.string(),
  instructions: z.string().nullable(),
  model: z.string().nullable(),
  token: z.string().min(1),
})
type Spec = z.infer<typeof Spec>

interface HostedIntern {
  id: string
  spec: Spec
  digest: string
  running: boolean
  startedAt: string | null
  /** Work counters: how often the configuration was really written and the intern really started. */
  configWrites: number
  starts: number
  /** Its daemon's runs and sessions: made at its first chat, ended when it stops. */
  daemon?: InternDaemon
}

const SessionId = z.string().min(1).max(256)
const ChatBody = z.union([
  z.strictObject({ session_id: SessionId.optional(), message: z.string().min(1).max(32_000), approval_mode: z.enum(['self-drive', 'manual']).default('self-drive') }),
  z.strictObject({ session_id: SessionId, reply: z.strictObject({ interaction_id: z.string().min(1).max(128), content: z.string().max(64_000) }) }),
])

const ID = /^[0-9a-f-]{36}$/

const digestOf = (text: string) => createHash('sha256').update(text).digest()

/**
 * Whether a request carries the control credential. Both sides are hashed first, so the comparison
 * takes the same time whatever the length or content of what was sent.
 */
function credentialCheck(token: string) {
  const expected = digestOf(`Bearer ${token}`)
  return (authorization: string | undefined) => authorization !== undefined && timingSafeEqual(digestOf(authorization), expected)
}

/**
 * Writes a file so that a crash leaves either the old content or the new, never a torn file
 * (write a temporary file, then rename over the target; rename is atomic on one filesystem).
 */
async function writeAtomically(path: string, content: string) {
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`
  // The host's own: an intern's configuration holds its key.
  await writeFile(temporary, content, { mode: 0o600 })
  await rename(temporary, path)
}

/**
 * The local runtime host: runs many interns in one process, each answering on its own hostname
 * (routed by Host / X-Forwarded-Host). Configurations are written to RUNTIME_DATA_DIR, so a
 * configured intern survives a restart of the host; whether it runs is held in memory, so a killed
 * host really loses its running interns, as a crashed machine would.
 */
export async function buildRuntimeHost(config: RuntimeConfig, opts: { logger?: boolean; metrics?: Metrics } = {}): Promise<FastifyInstance> {
  const interns = new Map<string, HostedIntern>()
  const byHostname = new Map<string, string>()
  await mkdir(config.RUNTIME_DATA_DIR, { recursive: true })

  const app = Fastify({
    logger: opts.logger === false ? false : loggerOptions('runtime', config.LOG_LEVEL),
    childLoggerFactory: requestLogger,
    logController: new LogController({ disableRequestLogging: !logsEachRequest(config.LOG_LEVEL) }),
    ...fastifyListenerOptions(config),
  })
  guardConnections(app.server, maxConnections(config), (reason) => opts.metrics?.connectionsCut.inc({ reason }))
  app.addHook('onRequest', (req, _reply, done) => {
    cutStalledBody(req.raw, config.BODY_IDLE_TIMEOUT_MS, () => opts.metrics?.connectionsCut.inc({ reason: 'body_idle' }))
    done()
  })
  const hostOf = (headers: Record<string, unknown>) =>
    String(headers['x-forwarded-host'] ?? headers.host ?? '').split(':')[0]!.toLowerCase()

  if (opts.metrics) app.addHook('onRequest', observeHttp(opts.metrics))
  if (tracing.on) traceHttpServer(app as never)
  const authorized = credentialCheck(config.RUNTIME_TOKEN)
  app.addHook('onRequest', async (req, reply) => {
    // Requests addressed to an intern's hostname are the intern's: its health, and nothing of the host.
    const internId = byHostname.get(hostOf(req.headers))
    if (internId) {
      const intern = interns.get(internId)!
      if (req.url !== '/healthz' || req.method !== 'GET') return reply.code(404).send({ error: 'not found' })
      if (!intern.running) return reply.code(503).send({ status: 'stopped' })
      return reply.send({ status: 'ok', intern: internId, started_at: intern.startedAt })
    }
    // Everything else obeys only the workers, who hold RUNTIME_TOKEN; the host's own health is open.
    if (req.url !== '/health' && !authorized(req.headers.authorization)) {
      return reply.code(401).header('www-authenticate', 'Bearer realm="roster-runtime"').send({ error: 'the runtime control API needs the RUNTIME_TOKEN credential' })
    }
  })

  app.get('/health', async () => ({ status: 'ok' }))

  // Interns' shell commands: sandboxed, with limits on what one command may take (and, as root, as an
  // unprivileged user), or refused where that cannot be (unless allowed unconfined). Said once, now.
  const { confinement, notes } = prepareConfinement(config)
  if (confinement.user) {
    const unreachable = await reachableBySandboxUser(config.RUNTIME_DATA_DIR, confinement.user)
    if (unreachable) {
      notes.push(`commands run as root inside their sandboxes: ${unreachable}`)
      delete confinement.user
    }
  }
  confineCommands(confinement)
  const commands = commandRunner(config.RUNTIME_UNCONFINED_COMMANDS, process.env, confinement.user)
  if (commands.mode === 'refused') notes.push(`interns' shell commands will be refused: they cannot be sandboxed here (${commands.why}); install bubblewrap`)
  if (commands.mode === 'unconfined') notes.push(`interns' shell commands run UNCONFINED (RUNTIME_UNCONFINED_COMMANDS=allow): ${commands.why}`)
  for (const note of notes) app.log.warn(note)
  chooseEgressForwarder(config.RUNTIME_EGRESS_FORWARDER)
  // With the vault configured, interns' HTTP requests go through the egress, which releases secrets by host.
  const db = config.DATABASE_URL && config.VAULT_MASTER_KEY ? createDb({ url: config.DATABASE_URL, poolSize: 4 }) : undefined
  const egress = db
    ? new Egress({
        db,
        vault: new LocalVault({ masterKey: config.VAULT_MASTER_KEY, lockTimeoutMs: 2_000 }),
        allowPrivateNetworks: config.EGRESS_PRIVATE_NETWORKS === 'allow',
        hosts: config.EGRESS_HOSTS,
        timeoutMs: 30_000,
        maxBytes: 256 * 1024,
      })
    : undefined
  // Shell commands granted the network reach it only through their intern's proxy (egress-proxy.ts).
  const proxies = new EgressProxies({
    dir: await mkdtemp(join(tmpdir(), 'roster-egress-')),
    allowPrivateNetworks: config.EGRESS_PRIVATE_NETWORKS === 'allow',
    hosts: config.EGRESS_HOSTS,
    timeoutMs: 30_000,
    maxRequestBytes: 8 * 1024 * 1024,
    egress,
    // A sandboxed command is as untrusted a client as any: the listener's limits, and few connections per intern.
    limits: { ...config, MAX_CONNECTIONS: EGRESS_CONNECTIONS_PER_INTERN },
    // Sandboxed commands run as this user: their proxy's socket is theirs to connect to.
    socketOwner: confinement.user,
  })
  // Shutting down, the host ends its interns' runs first (their commands killed, each client told
  // with run_ended; the sessions stay on disk), so their streams close and the server's close does
  // not wait on them: a turn may last minutes, and a connection it leaves open its keep-alive time.
  app.addHook('preClose', async () => {
    const ending = [...interns.values()].map((intern) => intern.daemon?.stop("the intern's host is shutting down; its run was cancelled (the session is kept: continue it when the intern is back)"))
    await settledWithin(Promise.all(ending), 5_000)
  })
  app.addHook('onClose', async () => {
    await proxies.closeAll()
    await egress?.close()
    await db?.$disconnect()
  })
  const internDir = (id: string) => join(config.RUNTIME_DATA_DIR, 'interns', id)

  const daemonOf = (intern: HostedIntern) => (intern.daemon ??= makeDaemon(intern))
  const makeDaemon = (intern: HostedIntern) => {
    const sessions = new SessionStore(join(internDir(intern.id), 'sessions'))
    const workspace = join(internDir(intern.id), 'workspace')
    let workspaceMade = false
    return new InternDaemon({
      sessions,
      deadlineMs: config.INTERACTION_DEADLINE_MS,
      maxPaused: config.RUN_MAX_PAUSED,
      onError: (err, sessionId) => app.log.warn({ err, intern: intern.id, session: sessionId }, 'an intern turn failed'),
      execute: async (run) => {
        // The configuration as it is now (a PATCH may have changed the model or instructions since).
        const spec = (interns.get(intern.id) ?? intern).spec
        if (!workspaceMade) {
          // Passable, not listable, on the way to the workspace: the sandbox user mounts it from there.
          await mkdir(join(config.RUNTIME_DATA_DIR, 'interns'), { recursive: true, mode: 0o711 })
          await mkdir(internDir(intern.id), { recursive: true, mode: 0o711 })
          await mkdir(workspace, { recursive: true })
          await ownWorkspace(workspace, confinement.user)
        }
        workspaceMade = true
        return runAgentTurn(
          {
            apiBase: config.ROSTER_API_URL,
            apiKey: spec.token,
            model: spec.model ?? config.INTERN_DEFAULT_MODEL,
            instructions: spec.instructions,
            workspace,
            runCommand: async (command, { network, ...limits }, signal) =>
              commands.run(command, { ...limits, workspace, egressSocket: network ? await proxies.socketFor(intern.id) : undefined }, signal),
            sessions,
            maxSteps: config.RUN_MAX_STEPS,
            commandTimeoutMs: config.COMMAND_TIMEOUT_MS,
            steered: run.steered,
            http: egress && ((args, signal) => egress.send(intern.id, args, signal)),
            approval: run.approval,
            commandNetwork: commands.mode !== 'refused',
            ask: run.ask,
          },
          run.sessionId,
          run.prompt,
          run.emit,
          run.signal,
        )
      },
    })
  }

  /**
   * A prompt for an intern, or a reply to what its paused run asked. Answered with a stream of the
   * run's own events (the API turns them into the chat route's chunks): `session` first, then text,
   * reasoning and tool events, then `done` with the usage, `pause` with a question (the stream ends,
   * the run waits for the reply), `error`, or `ended`. Refusals are JSON: 202 steered, 409 busy,
   * 503 busy (too many paused runs), 404 interaction_unknown, 409 interaction_not_pending, 400
   * bad_answer. A client that goes away while a run streams cancels it, with any command it runs.
   */
  app.post<{ Params: { id: string } }>('/v1/interns/:id/chat', async (req, reply) => {
    const intern = interns.get(req.params.id)
    if (!intern || !intern.running) return reply.code(409).send({ error: 'intern_not_ready' })
    const body = ChatBody.safeParse(req.body)
    if (!body.success) return reply.code(400).send({ error: 'bad_request', message: body.error.message })
    const daemon = daemonOf(intern)
    const stream = eventStream(reply, () => daemon.detach(stream))
    const outcome =
      'reply' in body.data
        ? await daemon.reply(body.data.session_id, body.data.reply.interaction_id, body.data.reply.content, stream)
        : daemon.prompt(body.data.session_id ?? `ses_${randomUUID()}`, body.data.message, body.data.approval_mode, stream)
    if ('started' in outcome || 'resumed' in outcome) return reply
    if ('steered' in outcome) return reply.code(202).send({ session_id: body.data.session_id, status: 'steered' })
    if ('busy' in outcome) return reply.code(outcome.status).send({ error: 'busy', message: outcome.busy })
    if ('unknown' in outcome) return reply.code(404).send({ error: 'interaction_unknown', message: outcome.unknown })
    if ('notPending' in outcome) return reply.code(409).send({ error: 'interaction_not_pending', message: outcome.notPending })
    return reply.code(400).send({ error: 'bad_answer', message: outcome.badAnswer })
  })

  app.put<{ Params: { id: string } }>('/v1/interns/:id', async (req, reply) => {
    if (!ID.test(req.params.id)) return reply.code(400).send({ error: 'bad intern id' })
    const spec = Spec.safeParse(req.body)
    if (!spec.success) return reply.code(400).send({ error: spec.error.message })
    const digest = createHash('sha256').update(JSON.stringify(spec.data)).digest('hex')
    const current = interns.get(req.params.id)
    if (current?.digest === digest) return { written: false }
    const owner = byHostname.get(spec.data.hostname)
    if (owner && owner !== req.params.id) return reply.code(409).send({ error: 'hostname belongs to another intern' })
    await writeAtomically(join(config.RUNTIME_DATA_DIR, `${req.params.id}.json`), JSON.stringify(spec.data))
    if (current && current.spec.hostname !== spec.data.hostname) byHostname.delete(current.spec.hostname)
    byHostname.set(spec.data.hostname, req.params.id)
    interns.set(req.params.id, {
      id: req.params.id,
      spec: spec.data,
      digest,
      running: current?.running ?? false,
      startedAt: current?.startedAt ?? null,
      configWrites: (current?.configWrites ?? 0) + 1,
      starts: current?.starts ?? 0,
      daemon: current?.daemon,
    })
    return { written: true }
  })

  app.post<{ Params: { id: string } }>('/v1/interns/:id/start', async (req, reply) => {
    const intern = interns.get(req.params.id)
    if (!intern) return reply.code(404).send({ error: 'intern is not configured on this host' })
    if (intern.running) return { started: false }
    intern.running = true
    intern.startedAt = new Date().toISOString()
    intern.starts += 1
    return { started: true }
  })

  app.post<{ Params: { id: string } }>('/v1/interns/:id/stop', async (req) => {
    const intern = interns.get(req.params.id)
    if (intern) intern.running = false
    // Suspending stops the intern's daemon: its runs are cancelled (a client listening is told), its sessions kept.
    void intern?.daemon?.stop('the intern was suspended; its run was cancelled')
    if (intern) intern.daemon = undefined
    await proxies.close(req.params.id)
    return { stopped: true }
  })

  // Before a teardown the intern's workspace, its sessions and its configuration (without its key)
  // are copied to archive/<id>-<time>/; written under a temporary name and renamed, so an archive
  // that exists is whole. An intern this host never had has nothing to archive.
  app.post<{ Params: { id: string } }>('/v1/interns/:id/archive', async (req, reply) => {
    if (!ID.test(req.params.id)) return reply.code(400).send({ error: 'bad intern id' })
    const intern = interns.get(req.params.id)
    if (!intern) return { archived: false }
    const archive = join(config.RUNTIME_DATA_DIR, 'archive')
    const target = join(archive, `${req.params.id}-${Date.now()}`)
    const partial = `${target}.partial`
    await mkdir(partial, { recursive: true })
    await writeFile(join(partial, 'intern.json'), JSON.stringify({ ...intern.spec, token: undefined }))
    await cp(internDir(req.params.id), partial, { recursive: true, force: true, verbatimSymlinks: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err // an intern that never ran has no directory
    })
    await rename(partial, target)
    return { archived: true, path: target }
  })

  app.delete<{ Params: { id: string } }>('/v1/interns/:id', async (req) => {
    const intern = interns.get(req.params.id)
    if (intern) byHostname.delete(intern.spec.hostname)
    void intern?.daemon?.stop('the intern was deleted')
    await proxies.close(req.params.id)
    interns.delete(req.params.id)
    if (ID.test(req.params.id)) {
      await rm(join(config.RUNTIME_DATA_DIR, `${req.params.id}.json`), { force: true })
      // Its workspace and sessions go with it (archived before, unless the caller gave them up).
      await rm(internDir(req.params.id), { recursive: true, force: true })
    }
    return { removed: true }
  })

  app.get<{ Params: { id: string } }>('/v1/interns/:id', async (req, reply) => {
    const intern = interns.get(req.params.id)
    if (!intern) return reply.code(404).send({ error: 'not hosted here' })
    const { spec, daemon, ...rest } = intern
    return { ...rest, hostname: spec.hostname, model: spec.model, config_file: join(config.RUNTIME_DATA_DIR, `${intern.id}.json`) }
  })

  app.get('/v1/interns', async () => ({
    data: [...interns.values()].map(({ spec, daemon, ...rest }) => ({ ...rest, hostname: spec.hostname })),
  }))

  // Configurations persist across restarts; running state does not.
  app.addHook('onReady', async () => {
    for (const file of await readdir(config.RUNTIME_DATA_DIR)) {
      const id = file.replace(/\.json$/, '')
      if (!ID.test(id) || interns.has(id)) continue
      // A file that cannot be read back (written by an older host before writes were atomic, or
      // damaged) must not stop the host: the provisioning that wrote it will write it again.
      let parsed
      try {
        parsed = Spec.safeParse(JSON.parse(await readFile(join(config.RUNTIME_DATA_DIR, file), 'utf8')))
      } catch {
        app.log.warn({ file }, 'skipping an unreadable intern configuration')
        continue
      }
      if (!parsed.success) continue
      const digest = createHash('sha256').update(JSON.stringify(parsed.data)).digest('hex')
      interns.set(id, { id, spec: parsed.data, digest, running: false, startedAt: null, configWrites: 0, starts: 0 })
      byHostname.set(parsed.data.hostname, id)
    }
  })
  return app
}

/**
 * A run's events as Server-Sent Events on `reply`, the response opened at the first event (so a
 * refusal can still be plain JSON). A client gone before the stream ended calls `gone`.
 */
function eventStream(reply: FastifyReply, gone: () => void): RunStream {
  const raw = reply.raw
  let opened = false
  return {
    send(event: RunEvent) {
      if (!opened) {
        opened = true
        reply.hijack()
        raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
        raw.on('close', () => raw.writableFinished || gone())
      }
      raw.write(`data: ${JSON.stringify(event)}\n\n`)
    },
    end() {
      if (opened) raw.end()
    },
  }
}
