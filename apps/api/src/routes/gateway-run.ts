import { once } from 'node:events'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, FastifySchemaCompiler } from 'fastify'
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod'
import type { z } from 'zod'
import type { GenerationContext } from '@roster/shared'
import {
  Cancellation,
  type AliasFamily,
  gatewayError,
  type CallOptions,
  type DoorStream,
  type FilterMatch,
  type PassThroughWhole,
  PROVIDER_REPLY,
  type ResponseObject,
  type ResponsesRequest,
  type WithProviderReply,
} from '@roster/gateway'
import { requireKey } from '../plugins/auth.js'
import { anthropicClient } from '../plugins/anthropic-clients.js'
import { admit } from '../plugins/fair-use.js'
import type { AppDeps } from '../deps.js'

/** Images travel inline as data: URLs, so the gateway's routes take more than the API's default. */
export const RESPONSES_BODY_LIMIT = 20 * 1024 * 1024

const header = (req: FastifyRequest, name: string) => {
  const v = req.headers[name]
  return Array.isArray(v) ? v[0] : v
}
const enabled = (v: string | undefined) => v?.trim().toLowerCase() === 'enabled'

/**
 * The routing-metadata opt-in. The official client's header (and its experimental predecessor)
 * also get the field under the client's name; the spec's legacy header gets `service_metadata`.
 */
function metadataOptIn(req: FastifyRequest): CallOptions['metadata'] {
  if (enabled(header(req, 'x-openrouter-metadata')) || enabled(header(req, 'x-openrouter-experimental-metadata')))
    return OPENROUTER_METADATA
  return enabled(header(req, 'x-service-experimental-metadata')) ? SERVICE_METADATA : NO_METADATA
}
const OPENROUTER_METADATA = Object.freeze({ service: true, openrouter: true })
const SERVICE_METADATA = Object.freeze({ service: true, openrouter: false })
const NO_METADATA = Object.freeze({ service: false, openrouter: false })

/**
 * A door's body validator: checked field by field as it came (a sparse parser: the same answer as
 * the door's schema, without running the fields a request does not carry). A body that fails is
 * checked again by the schema itself, so its error reads exactly as every other route's.
 */
export const sparseValidator =
  (parse: (body: unknown) => { success: boolean; data?: unknown }) =>
  (route: Parameters<FastifySchemaCompiler<unknown>>[0]) => {
    const full = validatorCompiler(route as Parameters<typeof validatorCompiler>[0])
    return (body: unknown) => {
      const parsed = parse(body)
      return parsed.success ? { value: parsed.data } : full(body)
    }
  }

/**
 * Whether the client reads the provider's items by OpenAI's own names: the openai client (its
 * `OpenAI/<lang>` user agent, or in a browser the `x-stainless-lang` it sends in its stead) and the
 * official client (`@openrouter/sdk`), whose types name them so. Any other client of /responses is
 * given them as Open Responses names an item it does not define: by the provider's slug.
 */
function readsOpenAINames(req: FastifyRequest): boolean {
  const agent = req.headers['user-agent'] ?? ''
  if (agent.startsWith('OpenAI/') || agent.includes('@openrouter/sdk')) return true
  const speakeasy = req.headers['x-speakeasy-user-agent']
  return (
    (typeof speakeasy === 'string' && speakeasy.includes('@openrouter/sdk')) ||
    (req.headers['x-stainless-lang'] !== undefined && req.headers['x-stainless-package-version'] !== undefined)
  )
}

/**
 * A gateway call's options from the request that asked for it, whatever the route or transport:
 * the sticky-session header, the routing-metadata opt-in, the cancellation that ends the upstream
 * call with the client, the door, and (for its generations) the preset the request named.
 */
export function callOptions(
  deps: Pick<AppDeps, 'config' | 'metrics'>,
  req: FastifyRequest,
  cancel: Cancellation,
  door: string,
  more: { doorStream?: DoorStream } = {},
): CallOptions {
  const generation = generationContext(req)
  const guardrails = req.caller?.guardrails
  return {
    sessionHeader: header(req, 'x-session-id'),
    metadata: metadataOptIn(req),
    cancel,
    door,
    doorStream: more.doorStream,
    tenant: req.caller?.keyId,
    generation,
    disabledTools: req.caller?.disabledServerTools,
    // Only the Responses doors show the provider's items by their type (the others translate them).
    ...(door.startsWith('responses') && !readsOpenAINames(req) ? { providerItemNames: 'slugged' as const } : {}),
    // Most callers have no guardrail: they pay for no region lookup and no closure.
    ...(guardrails && {
      guardrails,
      region: deps.config.DATA_REGION_HOSTS[req.hostname.toLowerCase()] ?? 'global',
      onFilterMatch: (m: FilterMatch) => {
        deps.metrics?.guardrailFilterMatches.inc({ action: m.action, filter: m.builtin ? m.filter : 'custom' })
        req.log.info({ guardrail: m.guardrail, filter: m.filter, action: m.action }, 'guardrail content filter matched')
      },
    }),
  }
}

/**
 * The caller's workspace's own provider keys (BYOK) for the engine, when it has some: undefined
 * otherwise, so that most requests go on without waiting a tick.
 */
export function ownKeys(
  deps: Pick<AppDeps, 'byokDirectory'>,
  req: FastifyRequest,
): Promise<CallOptions['byok']> | undefined {
  const caller = req.caller
  if (!caller?.hasByok) return undefined
  return deps.byokDirectory
    .forWorkspace(caller.accountId, caller.workspaceId)
    .then((credentials) => ({ credentials, caller: { keyHash: caller.keyHash, userId: caller.userId } }))
}

/** Who a request is for and where it came from, as its generations record it. */
export function generationContext(req: FastifyRequest): GenerationContext | undefined {
  const caller = req.caller
  if (!caller) return undefined
  // What a client says of itself is kept, within reason.
  const said = (name: string) => header(req, name)?.slice(0, 512) ?? null
  return {
    keyId: caller.keyId,
    workspaceId: caller.workspaceId,
    accountId: caller.accountId,
    userId: caller.userId,
    internId: caller.internId,
    sessionId: said('x-session-id'),
    httpReferer: said('http-referer') ?? said('referer'),
    appTitle: said('x-title'),
    userAgent: said('user-agent'),
    presetId: null,
    limits: caller.limits,
    // Sampled per request, so a request's generations keep their content together or not at all.
    keepContent: caller.ioLoggingRate > 0 && (caller.ioLoggingRate >= 1 || Math.random() < caller.ioLoggingRate),
  }
}

/** Cancelled when the client goes away before the reply is whole. */
export function cancelledOnClose(reply: FastifyReply): Cancellation {
  const cancel = new Cancellation()
  // A response closes once: `on` spares the wrapper `once` makes.
  reply.raw.on('close', () => reply.raw.writableFinished || cancel.cancel())
  return cancel
}

/** What a door gives the engine besides the neutral request: its name, and (streaming) its event writer. */
export interface Door {
  name: 'responses' | 'chat_completions' | 'messages'
  /** Absent: the stream is the engine's own Open Responses events. */
  stream?: DoorStream
  /** What the door read for the engine beyond the neutral request (DoorRoute.extras). */
  extras?: Partial<CallOptions>
}

/** A door's route: its wire format, checked field by field on the way in, and translated both ways. */
export interface DoorRoute<Body> {
  path: string
  operationId: string
  summary: string
  /** The request's schema (the OpenAPI document, and the error text of a body that fails). */
  schema: z.ZodType<Body>
  /** The same answer as `schema`, checking only the fields a body carries. */
  parse: (body: unknown) => { success: boolean; data?: Body }
  name: Door['name']
  /** Anthropic's door: errors in the shape its client parses, and the key also as `x-api-key`. */
  anthropic?: boolean
  /** The door's request as the engine's neutral request (absent: it is one already). */
  toNeutral?: (body: Body) => ResponsesRequest
  /** The door's stream writer (absent: the engine's own Open Responses events). */
  stream?: (body: Body) => DoorStream
  /** The door's reply from the finished Response (absent: the Response itself). */
  reply?: (response: ResponseObject, body: Body) => unknown
  /** What the door gives the engine from the request's headers and body beyond the neutral request (throws a gateway error to refuse it). */
  extras?: (headers: FastifyRequest['headers'], body: Body) => Partial<CallOptions>
  /** Whose model names the door takes as the catalogue's aliases (the provider whose protocol it speaks). */
  aliases: AliasFamily
  /**
   * How the door answers a whole reply its provider gave in the door's own protocol (pass-through;
   * a stream's is its stream writer's), and whether this request's reply may be (absent: always).
   */
  passThrough?: { whole: PassThroughWhole; allowed?: (body: Body) => boolean }
}

/** A request may ask for the translated reply: `X-Roster-Pass-Through: off`. */
const passThroughRefused = (req: FastifyRequest) => header(req, 'x-roster-pass-through')?.trim().toLowerCase() === 'off'

/** POST <path> for one door: wiring only; the engine (packages/gateway) does the work. Any valid key. */
export const doorRoute =
  <Body>(deps: AppDeps, door: DoorRoute<Body>): FastifyPluginAsync =>
  async (app) => {
    app.withTypeProvider<ZodTypeProvider>().post(
      door.path,
      {
        onRequest: [
          requireKey(deps.authenticate, { xApiKey: door.anthropic, inference: true }),
          admit(deps.admission, RESPONSES_BODY_LIMIT),
        ],
        bodyLimit: RESPONSES_BODY_LIMIT,
        config: { errorWire: door.anthropic ? 'anthropic' : 'gateway' },
        validatorCompiler: sparseValidator(door.parse),
        schema: { operationId: door.operationId, summary: door.summary, body: door.schema },
      },
      async (req, reply) => {
        const body = req.body as Body
        const extras = door.extras?.(req.headers, body)
        const neutral = door.toNeutral ? door.toNeutral(body) : (body as ResponsesRequest)
        const pass = door.passThrough
        const passes =
          !!pass && deps.config.GATEWAY_PASS_THROUGH && !passThroughRefused(req) && (pass.allowed?.(body) ?? true)
        const response = await runGateway(deps, req, reply, neutral, {
          name: door.name,
          stream: neutral.stream ? door.stream?.(body) : undefined,
          // The engine reads the model names as the door's provider names them, and on Anthropic's
          // door answers one it does not know 404 "model: <name>", as Anthropic does (its clients and
          // agents read that); the OpenRouter doors refuse it by routing (400), as OpenRouter does.
          extras: {
            ...extras,
            names: door.aliases,
            ...(door.anthropic ? { unknownModel: 'not_found' as const } : {}),
            ...(passes ? { passThrough: pass.whole } : {}),
          },
        })
        if (!response) return reply
        // The provider's own reply, as it came but for Roster's ids and cost: sent as it is.
        const own = (response as WithProviderReply)[PROVIDER_REPLY]
        if (own) return reply.type('application/json; charset=utf-8').send(own)
        return door.reply ? door.reply(response, body) : response
      },
    )
  }

/**
 * What the engine left out of a request, in HTTP's Warning header (RFC 7234 §5.5, code 299:
 * "miscellaneous persistent warning"; the field is obsolete for caches, RFC 9111, but the one place
 * every client and proxy can show a note beside an answer whose body has no room for one).
 */
const warningHeader = (warnings: string[]) =>
  warnings.map((w) => `299 roster ${JSON.stringify(w.replace(/[^\x20-\x7e]/g, '?'))}`)

/** Which way a reply went: the provider's own (`pass-through`) or translated by its door (docs/gateway.md). */
const REPLY_PATH = 'x-roster-reply-path'

/**
 * One gateway request through the engine, whichever door it came by: the preset resolved, the
 * upstream call cancelled if the client leaves, and either the finished Response (for the door to
 * translate) or the stream written to the client as the engine makes it. Streaming, it answers
 * undefined once the stream is written.
 */
export async function runGateway(
  deps: AppDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  neutral: ResponsesRequest,
  door: Door,
): Promise<ResponseObject | undefined> {
  const body = neutral
  // A client that goes away cancels the upstream request with it.
  const cancel = cancelledOnClose(reply)
  const opts = callOptions(deps, req, cancel, door.name, { doorStream: door.stream })
  if (door.extras) Object.assign(opts, door.extras)
  const byok = ownKeys(deps, req)
  if (byok) opts.byok = await byok
  const warnings: string[] = []
  opts.warnings = warnings
  const path = { passedThrough: false }
  opts.replyPath = path
  if (!body.stream) {
    try {
      const response = await deps.responses.respond(body, opts)
      if (warnings.length) reply.header('warning', warningHeader(warnings))
      reply.header(REPLY_PATH, path.passedThrough ? 'pass-through' : 'translated')
      return response
    } catch (err) {
      // The client went away and the upstream call was cancelled with it: no one to answer.
      if (cancel.aborted) throw gatewayError('unmapped', 'the client closed the connection')
      throw err
    }
  }
  const raw = reply.raw
  try {
    await deps.responses.stream(body, opts, {
      open() {
        reply.hijack()
        // Hijacked, so Fastify's onSend hooks do not run: the request id is set here.
        const headers: Record<string, string | string[]> = {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
          'x-request-id': req.id,
          ...(anthropicClient(req) ? { 'request-id': req.id } : {}),
        }
        if (warnings.length) headers.warning = warningHeader(warnings)
        headers[REPLY_PATH] = path.passedThrough ? 'pass-through' : 'translated'
        raw.writeHead(200, headers)
      },
      write: (chunk) => raw.write(chunk),
      cork: () => raw.cork(),
      uncork: () => raw.uncork(),
      // A socket already closed never drains (nor closes again): nothing to wait for.
      drain: () =>
        raw.destroyed
          ? Promise.resolve()
          : Promise.race([once(raw, 'drain'), once(raw, 'close')]).then(() => undefined),
      end: () => raw.end(),
    })
  } catch (err) {
    if (!reply.sent) throw err
    // Already streaming: the status line is gone, so the connection is closed instead.
    req.log.error({ err }, 'gateway stream failed')
    raw.destroy()
  }
  // The client left before the first event: nothing was sent, and no one is left to answer.
  if (!reply.sent) {
    reply.hijack()
    raw.destroy()
  }
  return undefined
}
