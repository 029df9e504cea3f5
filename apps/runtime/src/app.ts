import Fastify, { LogController, type FastifyInstance } from 'fastify'
import { mkdir, mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { hostError, type RuntimeConfig } from '@roster/protocol'
import {
  cutStalledBody,
  fastifyListenerOptions,
  guardConnections,
  isSecret,
  loggerOptions,
  logsEachRequest,
  maxConnections,
  observeHttp,
  requestLogger,
  secretDigest,
  settledWithin,
  traceHttpServer,
  tracing,
  type Metrics,
} from '@roster/platform'
import { EgressProxies } from './egress-proxy.js'
import { chooseEgressForwarder, commandRunner, confineCommands } from './sandbox.js'
import { prepareConfinement, reachableBySandboxUser } from './confinement.js'
import { FleetClient } from './fleet-client.js'
import { Interns } from './interns.js'
import { controlRoutes } from './routes/control.js'
import { chatRoutes } from './routes/chat.js'
import { sandboxRoutes } from './routes/sandboxes.js'
import { GatewaySandboxes } from './gateway-sandboxes.js'

/** Connections one intern's egress proxy holds at most (its commands' HTTP requests and tunnels). */
const EGRESS_CONNECTIONS_PER_INTERN = 256

export interface RuntimeHost {
  app: FastifyInstance
  interns: Interns
  fleet: FleetClient
}

/**
 * A runtime host: runs many interns in one process, each answering on its own hostname (routed by
 * Host / X-Forwarded-Host), for the fleet it joins (membership.ts). It holds no master key and no
 * database credential: what it keeps durably, and the secrets its interns use, go through the API.
 * Its control API obeys only callers holding the credential the fleet gave it, and answers for an
 * intern only while its lease (its last acknowledged heartbeat) holds: a host cut off from the record
 * answers for none.
 */
export async function buildRuntimeHost(
  config: RuntimeConfig,
  opts: { logger?: boolean; metrics?: Metrics; hostId: string },
): Promise<RuntimeHost> {
  await mkdir(config.RUNTIME_DATA_DIR, { recursive: true })
  const app = Fastify({
    logger: opts.logger === false ? false : loggerOptions('runtime', config.LOG_LEVEL),
    childLoggerFactory: requestLogger,
    logController: new LogController({ disableRequestLogging: !logsEachRequest(config.LOG_LEVEL) }),
    ...fastifyListenerOptions(config),
  })
  guardConnections(app.server, maxConnections(config), (reason) => opts.metrics?.connectionsCut.inc({ reason }))
  app.addHook('onRequest', (req, _reply, done) => {
    cutStalledBody(req.raw, config.BODY_IDLE_TIMEOUT_MS, () =>
      opts.metrics?.connectionsCut.inc({ reason: 'body_idle' }),
    )
    done()
  })
  if (opts.metrics) app.addHook('onRequest', observeHttp(opts.metrics))
  if (tracing.on) traceHttpServer(app)

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
  if (commands.mode === 'refused')
    notes.push(
      `interns' shell commands will be refused: they cannot be sandboxed here (${commands.why}); install bubblewrap`,
    )
  if (commands.mode === 'unconfined')
    notes.push(`interns' shell commands run UNCONFINED (RUNTIME_UNCONFINED_COMMANDS=allow): ${commands.why}`)
  for (const note of notes) app.log.warn(note)
  chooseEgressForwarder(config.RUNTIME_EGRESS_FORWARDER)

  const fleet = new FleetClient(config.ROSTER_API_URL, opts.hostId, config.RUNTIME_TOKEN)
  // Shell commands granted the network reach it only through their intern's proxy (egress-proxy.ts),
  // which hands what carries a secret to the API's egress.
  const proxies = new EgressProxies({
    dir: await mkdtemp(join(tmpdir(), 'roster-egress-')),
    allowPrivateNetworks: config.EGRESS_PRIVATE_NETWORKS === 'allow',
    hosts: config.EGRESS_HOSTS,
    timeoutMs: 30_000,
    maxRequestBytes: 8 * 1024 * 1024,
    egress: fleet,
    // A sandboxed command is as untrusted a client as any: the listener's limits, and few connections per intern.
    limits: { ...config, MAX_CONNECTIONS: EGRESS_CONNECTIONS_PER_INTERN },
    // Sandboxed commands run as this user: their proxy's socket is theirs to connect to.
    socketOwner: confinement.user,
  })
  const interns = new Interns({ config, log: app.log, fleet, commands, proxies, user: confinement.user })

  const hostOf = (headers: Record<string, unknown>) =>
    String(headers['x-forwarded-host'] ?? headers.host ?? '')
      .split(':')[0]!
      .toLowerCase()
  app.addHook('onRequest', async (req, reply) => {
    // Requests addressed to an intern's hostname are the intern's: its health, and nothing of the host.
    const intern = interns.byHost(hostOf(req.headers))
    if (intern) {
      if (req.url !== '/healthz' || req.method !== 'GET')
        return reply.code(404).send({ error: 'not_found', message: 'not found' })
      // A host out of touch with the record answers for no intern: it may have been moved.
      if (!intern.running || !fleet.verified) return reply.code(503).send({ status: 'stopped' })
      return reply.send({ status: 'ok', intern: intern.id, started_at: intern.startedAt })
    }
    if (req.url === '/health' || req.url === '/ready') return
    // Everything else obeys only the fleet, which holds this host's credential.
    const token = fleet.token
    if (!token)
      return reply.code(503).send(hostError('placement_unverified', 'this host has not joined the fleet yet').body)
    const given = req.headers.authorization
    if (!isSecret(given, secretDigest(`Bearer ${token}`))) {
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="roster-runtime"')
        .send(hostError('unauthorized', "the runtime control API needs this host's fleet credential").body)
    }
    // Calls about interns wait for the record's word while this host is out of touch with it.
    if (!fleet.verified && req.url.startsWith('/v1/interns/'))
      return reply
        .code(503)
        .send(
          hostError(
            'placement_unverified',
            'this host has not heard from the fleet lately; it answers for no intern until it has',
          ).body,
        )
  })

  app.get('/health', async () => ({ status: 'ok', joined: !!fleet.token }))
  // Ready: a member of the fleet, in touch with it, and taking interns (not draining): a rollout waits for it.
  app.get('/ready', async (_req, reply) => {
    const ready = !!fleet.token && fleet.verified && !interns.draining
    return reply
      .code(ready ? 200 : 503)
      .send({ ready, joined: !!fleet.token, in_touch: fleet.verified, draining: interns.draining })
  })
  controlRoutes(app, interns)
  chatRoutes(app, interns)
  const sandboxes = new GatewaySandboxes({
    dataDir: config.RUNTIME_DATA_DIR,
    run: commands.run,
    timeoutMs: config.COMMAND_TIMEOUT_MS,
    maxOutputBytes: 256 * 1024,
    concurrency: config.GATEWAY_SANDBOX_CONCURRENCY,
    idleMs: config.GATEWAY_SANDBOX_IDLE_MS,
    user: confinement.user,
    // A sandbox whose network_policy allows hosts reaches them through an egress proxy of its own.
    egress: { proxies, ports: config.GATEWAY_SANDBOX_EGRESS_PORTS },
  })
  app.addHook('onClose', async () => sandboxes.stop())
  sandboxRoutes(app, sandboxes)

  // Shutting down, the host ends its interns' runs first (their commands killed, each client told
  // with run_ended; the sessions are kept), so their streams close and the server's close does not
  // wait on them: a turn may last minutes, and a connection it leaves open its keep-alive time.
  app.addHook('preClose', async () => {
    const ending = interns
      .list()
      .map((intern) =>
        intern.daemon?.stop(
          "the intern's host is shutting down; its run was cancelled (the session is kept: continue it when the intern is back)",
        ),
      )
    await settledWithin(Promise.all(ending), 5_000)
  })
  app.addHook('onClose', async () => {
    await proxies.closeAll()
    await fleet.close()
  })
  return { app, interns, fleet }
}
