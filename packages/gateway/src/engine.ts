import { createHmac, randomBytes } from 'node:crypto'
import { Pool, type Dispatcher } from 'undici'
import type { Catalogue, CatalogueModel, Endpoint } from './catalogue.js'
import type { ResponsesRequest } from './request.js'
import { fromChatReply, toChatBody, type Turn } from './adapters/openai-chat.js'

type Json = Record<string, any>

/** A failure with its HTTP status and the spec's canonical error type. */
export class GatewayError extends Error {
  override name = 'GatewayError'
  constructor(
    readonly status: number,
    readonly errorType: string,
    message: string,
    readonly retryAfter?: string,
  ) {
    super(message)
  }
}

export interface EngineOptions {
  catalogue: Catalogue
  env: NodeJS.ProcessEnv
  /** Key of the HMAC that replaces `user` before it goes upstream. */
  userHashKey: Buffer
}

/** Protocols this engine can speak so far; the others are refused by name. */
const SPOKEN = new Set(['openai-chat'])

/**
 * The responses engine: validates what it cannot serve, picks the model and endpoint, calls the
 * provider, and builds the Response object. Nothing is stored.
 */
export class ResponsesEngine {
  private readonly pools = new Map<string, Pool>()

  constructor(private readonly options: EngineOptions) {}

  async respond(req: ResponsesRequest): Promise<Json> {
    refuseUnsupported(req)
    if (req.stream) throw new GatewayError(400, 'invalid_request', 'stream: true is not served yet by this Roster; send stream: false')
    const candidates = [req.model, ...(req.models ?? [])].filter((m): m is string => !!m)
    const models = candidates.map((id) => this.options.catalogue.models.find((m) => m.id === id)).filter((m): m is CatalogueModel => !!m)
    if (models.length === 0) {
      throw new GatewayError(400, 'invalid_request', `no model named ${candidates.join(', ')} is served here; GET /api/v1/models lists them`)
    }
    const user = req.user ? createHmac('sha256', this.options.userHashKey).update(req.user).digest('hex') : undefined
    let last: GatewayError | undefined
    // Fallbacks: each model's endpoints in order, then the next model; only retryable failures move on.
    for (const model of models) {
      for (const endpoint of model.endpoints.filter((e) => SPOKEN.has(e.protocol))) {
        try {
          const turn = await this.call(endpoint, toChatBody(req, endpoint.upstream_model, user))
          return responseObject(req, model, endpoint, turn)
        } catch (err) {
          if (!(err instanceof GatewayError)) throw err
          last = err
          if (!retryable(err)) throw err
        }
      }
    }
    throw last ?? new GatewayError(400, 'invalid_request', `no endpoint of ${models.map((m) => m.id).join(', ')} speaks a protocol this Roster serves yet`)
  }

  async close() {
    await Promise.all([...this.pools.values()].map((p) => p.close()))
  }

  private pool(origin: string) {
    let pool = this.pools.get(origin)
    if (!pool) this.pools.set(origin, (pool = new Pool(origin, { connections: 128, pipelining: 1 })))
    return pool
  }

  private async call(endpoint: Endpoint, body: Json): Promise<Turn> {
    const url = new URL(endpoint.base_url.replace(/\/$/, '') + '/chat/completions')
    const key = endpoint.api_key_env ? this.options.env[endpoint.api_key_env] : undefined
    let res: Dispatcher.ResponseData
    try {
      res = await this.pool(url.origin).request({
        method: 'POST',
        path: url.pathname + url.search,
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify(body),
        headersTimeout: endpoint.timeout_ms,
        bodyTimeout: endpoint.timeout_ms,
      })
    } catch (err) {
      const timedOut = /timeout/i.test((err as Error)?.name ?? '') || /timeout/i.test((err as Error)?.message ?? '')
      throw timedOut
        ? new GatewayError(504, 'timeout', `${endpoint.provider} did not answer within ${endpoint.timeout_ms} ms`)
        : new GatewayError(502, 'provider_unavailable', `${endpoint.provider} could not be reached`)
    }
    const text = await res.body.text()
    if (res.statusCode >= 400) throw upstreamError(endpoint, res.statusCode, text, res.headers['retry-after'])
    try {
      return fromChatReply(JSON.parse(text))
    } catch {
      throw new GatewayError(502, 'provider_unavailable', `${endpoint.provider} answered something that is not a chat completion`)
    }
  }
}

function refuseUnsupported(req: ResponsesRequest) {
  const kinds = [...new Set((req.tools ?? []).map((t) => t.type).filter((t) => t !== 'function'))]
  if (kinds.length) throw new GatewayError(400, 'invalid_request', `tool kinds not implemented by this Roster: ${kinds.join(', ')}`)
  const plugins = (req.plugins ?? []).map((p) => p.id)
  if (plugins.length) throw new GatewayError(400, 'invalid_request', `plugins not implemented by this Roster: ${plugins.join(', ')}`)
}

const retryable = (e: GatewayError) => e.status === 429 || e.status >= 500

/** A provider's error as the spec's canonical type; the provider's own message is not passed on raw. */
function upstreamError(endpoint: Endpoint, status: number, body: string, retryAfter: string | string[] | undefined): GatewayError {
  const detail = (() => {
    try {
      const j = JSON.parse(body)
      return String(j?.error?.message ?? j?.message ?? '').slice(0, 300)
    } catch {
      return ''
    }
  })()
  const said = detail ? `: ${detail}` : ''
  const after = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter
  if (status === 429) return new GatewayError(429, 'rate_limit_exceeded', `${endpoint.provider} is rate limiting${said}`, after)
  if (status === 400 || status === 422) return new GatewayError(400, 'invalid_request', `${endpoint.provider} refused the request${said}`)
  if (status === 401 || status === 403) return new GatewayError(502, 'authentication', `${endpoint.provider} refused Roster's credential`)
  if (status === 413) return new GatewayError(413, 'payload_too_large', `${endpoint.provider} found the request too large${said}`)
  if (status === 529 || status === 503) return new GatewayError(503, 'provider_overloaded', `${endpoint.provider} is overloaded${said}`)
  return new GatewayError(502, 'provider_unavailable', `${endpoint.provider} failed (${status})${said}`)
}

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`

/** The Response object (every key the client requires, nullable ones as null) from one turn. */
export function responseObject(req: ResponsesRequest, model: CatalogueModel, endpoint: Endpoint, turn: Turn): Json {
  const output: Json[] = []
  if (turn.reasoning) output.push({ type: 'reasoning', id: id('rs'), summary: [{ type: 'summary_text', text: turn.reasoning }] })
  for (const call of turn.toolCalls) {
    output.push({ type: 'function_call', id: id('fc'), call_id: call.id, name: call.name, arguments: call.arguments, status: 'completed' })
  }
  if (turn.text !== null || turn.refusal !== null) {
    output.push({
      type: 'message',
      id: id('msg'),
      role: 'assistant',
      status: 'completed',
      content: [
        ...(turn.text !== null ? [{ type: 'output_text', text: turn.text, annotations: [] }] : []),
        ...(turn.refusal !== null ? [{ type: 'refusal', refusal: turn.refusal }] : []),
      ],
    })
  }
  const prices = endpoint.pricing ?? model.pricing
  const inputCost = (turn.usage.input - turn.usage.cached) * Number(prices.input) + turn.usage.cached * Number(prices.cached_input ?? prices.input)
  const outputCost = turn.usage.output * Number(prices.output)
  const now = Math.floor(Date.now() / 1000)
  const incomplete = turn.finish === 'length' || turn.finish === 'content_filter'
  return {
    id: id('resp'),
    object: 'response',
    created_at: now,
    completed_at: now,
    model: model.id,
    status: incomplete ? 'incomplete' : 'completed',
    output,
    output_text: turn.text ?? '',
    error: null,
    incomplete_details: incomplete ? { reason: turn.finish === 'length' ? 'max_output_tokens' : 'content_filter' } : null,
    instructions: req.instructions ?? null,
    metadata: req.metadata ?? null,
    temperature: req.temperature ?? null,
    top_p: req.top_p ?? null,
    frequency_penalty: req.frequency_penalty ?? null,
    presence_penalty: req.presence_penalty ?? null,
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    tool_choice: req.tool_choice ?? 'auto',
    tools: req.tools ?? [],
    max_output_tokens: req.max_output_tokens ?? null,
    service_tier: req.service_tier === 'fast' ? 'priority' : (req.service_tier ?? null),
    store: false,
    text: req.text ?? { format: { type: 'text' } },
    truncation: req.truncation ?? null,
    usage: {
      input_tokens: turn.usage.input,
      input_tokens_details: { cached_tokens: turn.usage.cached },
      output_tokens: turn.usage.output,
      output_tokens_details: { reasoning_tokens: turn.usage.reasoning },
      total_tokens: turn.usage.input + turn.usage.output,
      cost: inputCost + outputCost,
      cost_details: {
        upstream_inference_cost: inputCost + outputCost,
        upstream_inference_input_cost: inputCost,
        upstream_inference_output_cost: outputCost,
      },
    },
  }
}
