import Fastify, { LogController, type FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import websocket from '@fastify/websocket'
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
} from 'fastify-type-provider-zod'
import { randomUUID } from 'node:crypto'
import {
  cutStalledBody,
  fastifyListenerOptions,
  guardConnections,
  loggerOptions,
  logsEachRequest,
  maxConnections,
  observeHttp,
  requestLogger,
  traceHttpServer,
  tracing,
  type Caller,
} from '@roster/shared'
import type { AppDeps } from './deps.js'
import { modelRoutes } from './routes/models.js'
import { compactRoutes, RESPONSES_BODY_LIMIT, responsesRoutes } from './routes/responses.js'
import { responsesWebSocketRoutes } from './routes/responses-ws.js'
import { chatCompletionsRoutes } from './routes/chat-completions.js'
import { countTokensRoutes, messagesRoutes } from './routes/messages.js'
import { keyRoutes } from './routes/keys.js'
import { generationRoutes } from './routes/generations.js'
import { creditRoutes } from './routes/credits.js'
import { workspaceRoutes } from './routes/workspaces.js'
import { guardrailRoutes } from './routes/guardrails.js'
import { byokRoutes } from './routes/byok.js'
import { analyticsRoutes } from './routes/analytics.js'
import { observabilityRoutes } from './routes/observability.js'
import { presetRoutes } from './routes/presets.js'
import { fileRoutes } from './routes/files.js'
import { vaultRoutes } from './routes/vault.js'
import { registerErrorHandling } from './plugins/errors.js'
import { anthropicClient } from './plugins/anthropic-clients.js'
import { clientErrorHandler, frameworkErrors, registerInputGuards } from './plugins/input-guards.js'
import { internRoutes } from './routes/interns/index.js'
import { slackOAuthRoutes } from './routes/slack-oauth.js'
import { slackEventRoutes } from './routes/slack-events.js'
import { hookRoutes } from './routes/hooks.js'
import { healthRoutes } from './routes/health.js'
import { consoleSessionRoutes } from './routes/console-session.js'
import { auditGovernance } from './audit/audited-operations.js'
import { operatorRoutes } from './routes/operator.js'
import { consoleLane } from './console/lane.js'
import { consoleStaticRoutes } from './routes/console-static.js'
import { guardrailDryRunRoutes } from './routes/guardrail-dry-run.js'
import { fleetRoutes } from './routes/fleet.js'
import { sweepPeriodically } from './fleet/snapshots.js'

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller
    /** Authenticated by a web console session's cookie rather than a key (console/session-cookie.ts). */
    viaConsoleSession: boolean
  }
}

export const BODY_LIMIT = 1_048_576
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Builds the API without listening, so tests can inject requests. */
export async function buildApp(deps: AppDeps, opts: { logger?: boolean } = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger === false ? false : loggerOptions('api', deps.config.LOG_LEVEL),
    bodyLimit: BODY_LIMIT,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    childLoggerFactory: requestLogger,
    logController: new LogController({ disableRequestLogging: !logsEachRequest(deps.config.LOG_LEVEL) }),
    // Path parameters up to a vault secret name's 255 characters (and past it, so that a longer
    // one reaches validation and its 400); Fastify's default is 100.
    routerOptions: { maxParamLength: 512 },
    // The router's and Node's own refusals leave in the documented error body too.
    frameworkErrors,
    clientErrorHandler: clientErrorHandler((reason) => deps.metrics?.connectionsCut.inc({ reason })),
    // Timeouts on headers, bodies and idle keep-alive connections (packages/platform/src/listener-limits.ts).
    ...fastifyListenerOptions(deps.config),
    trustProxy: deps.config.TRUST_PROXY,
  })
  // A ceiling on connections, below the file-descriptor limit: the process keeps its descriptors for its own work.
  guardConnections(app.server, maxConnections(deps.config), (reason) => deps.metrics?.connectionsCut.inc({ reason }))
  // The console's requests take turns, so that a crowd on its pages cannot hold the gateway's (lane.ts).
  app.addHook('onRequest', consoleLane(deps.config.CONSOLE_CONCURRENCY))
  app.addHook('onRequest', (req, _reply, done) => {
    cutStalledBody(req.raw, deps.config.BODY_IDLE_TIMEOUT_MS, () =>
      deps.metrics?.connectionsCut.inc({ reason: 'body_idle' }),
    )
    done()
  })
  // JSON only: Fastify's built-in text/plain parser would let a non-JSON body through to
  // validation (400) where the spec wants 415.
  app.removeContentTypeParser(['text/plain', 'application/json'])
  registerInputGuards(app)
  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(serializerCompiler)
  // A callback hook, not an async one: it runs on every response and needs no promise.
  app.addHook('onSend', (req, reply, payload, done) => {
    reply.header('x-request-id', req.id)
    // The Anthropic client reads the id from `request-id` (its `_request_id`, an error's `request_id`).
    if (anthropicClient(req)) reply.header('request-id', req.id)
    done(null, payload)
  })
  registerErrorHandling(app)
  // Only with metrics on: without, the hot path carries nothing of them.
  if (deps.metrics) app.addHook('onRequest', observeHttp(deps.metrics))
  // Likewise traces: a span per request only when an OTLP endpoint is configured.
  if (tracing.on) traceHttpServer(app)
  deps.responses.useTraceLogger(app.log.child({ component: 'trace' }))
  // The S3 snapshot store's replaced and orphaned objects are deleted in the background.
  const stopSweeping = deps.snapshots.kind === 's3' ? sweepPeriodically(deps.snapshots, 60_000, app.log) : undefined
  app.addHook('onClose', async () => {
    stopSweeping?.()
    deps.snapshots.close()
    deps.watch.close()
    deps.requestRate.close()
    deps.webSockets.close()
    deps.admission.close()
    await deps.runtime.close()
    await deps.egress?.close()
    await deps.responses.close()
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Roster API', version: '1.0.0', description: 'Interns, responses and presets, self-hosted.' },
      servers: [{ url: '/' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  })

  // The WebSocket transport of /responses; a message may be as large as a /responses body.
  await app.register(websocket, { options: { maxPayload: RESPONSES_BODY_LIMIT }, errorHandler: websocketError })
  app.decorateRequest('viaConsoleSession', false)
  await app.register(healthRoutes(deps))
  await app.register(consoleStaticRoutes)
  // The runtime hosts' own API (outside /api/v1: it is not the public API).
  await app.register(fleetRoutes(deps))
  await app.register(
    async (v1) => {
      await v1.register(internRoutes(deps))
      await v1.register(modelRoutes(deps))
      await v1.register(responsesRoutes(deps))
      await v1.register(compactRoutes(deps))
      await v1.register(responsesWebSocketRoutes(deps))
      await v1.register(chatCompletionsRoutes(deps))
      await v1.register(messagesRoutes(deps))
      await v1.register(countTokensRoutes(deps))
      await v1.register(presetRoutes(deps))
      await v1.register(fileRoutes(deps))
      // Governance: each change lands in the audit log (audit/audited-operations.ts); its hooks
      // stay out of the gateway's doors.
      await v1.register(async (governed) => {
        auditGovernance(governed, deps)
        await governed.register(keyRoutes(deps))
        await governed.register(workspaceRoutes(deps))
        await governed.register(guardrailRoutes(deps))
        await governed.register(byokRoutes(deps))
        await governed.register(analyticsRoutes(deps))
        await governed.register(observabilityRoutes(deps))
      })
      await v1.register(generationRoutes(deps))
      await v1.register(creditRoutes(deps))
      await v1.register(guardrailDryRunRoutes(deps))
      await v1.register(vaultRoutes(deps))
      await v1.register(slackOAuthRoutes(deps))
      await v1.register(slackEventRoutes(deps))
      await v1.register(hookRoutes(deps))
      await v1.register(consoleSessionRoutes(deps))
      await v1.register(operatorRoutes(deps))
      v1.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
    },
    { prefix: '/api/v1' },
  )
  return app
}

/**
 * A WebSocket connection's error. A frame over the limit, invalid UTF-8 or a bad opcode is the
 * client's error, not the server's: ws has already begun closing with the status that says so
 * (1009, 1007, 1002), which terminating the socket here could cut off. Anything else ends the
 * connection at once.
 */
export function websocketError(
  error: Error,
  socket: { terminate(): void },
  request: { log: { info(obj: object, msg: string): void; error(obj: object, msg: string): void } },
) {
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && code.startsWith('WS_ERR_'))
    return request.log.info({ code, reason: error.message }, 'websocket client broke the protocol; closing')
  request.log.error({ err: error }, 'websocket connection failed')
  socket.terminate()
}
