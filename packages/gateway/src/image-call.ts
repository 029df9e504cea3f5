import { catalogueIdOf } from './catalogue.js'
import { gatewayError, GatewayError, invalid, retryable } from './errors.js'
import { emptyUsage, type Usage } from './deltas.js'
import { costPicoParts, usdOfPico } from '@roster/protocol'
import type { Run, Timing } from './run.js'
import { startRun, type EngineParts } from './run-setup.js'
import { modelCall } from './run-accounting.js'
import type { Transport, Wire } from './upstream.js'
import type { GeneratedImage } from './server-tools/tool.js'

// An image made for a server tool (`openrouter:image_generation`) by a model of the catalogue that
// generates images (`capabilities.image_generation`), through OpenAI's Images API at its endpoints
// (`{base_url}/images/generations`: OpenAI's, and the servers that speak it). The route is the
// engine's, with the caller's guardrails, BYOK and content filters (the prompt is the model's
// input); each endpoint that fails in a way another may not is tried in turn; the call is a
// generation of the calling request, its cost in the request's.

/** OpenAI's Images API, as the transport sends to it. */
const IMAGES: Wire = {
  path: '/images/generations',
  headers: (key) => ({ 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }),
}

/** The protocols whose endpoints are OpenAI-compatible servers, where the Images API lives beside them. */
const IMAGE_PROTOCOLS = new Set(['openai-chat', 'openai-responses'])

/** The catalogue's first model that generates images (a tool's default), if any. */
export const defaultImageModel = (parts: Pick<EngineParts, 'catalogue'>) =>
  parts.catalogue.models.find((m) => m.capabilities.image_generation)?.id

/** What the Images API answers, as far as Roster reads it. */
interface ImagesAnswer {
  data?: { b64_json?: unknown; url?: unknown; revised_prompt?: unknown }[]
  usage?: { input_tokens?: unknown; output_tokens?: unknown }
}

const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : 0)

export async function generateImage(
  parts: EngineParts & { transport: Transport },
  parent: Run,
  model: string,
  prompt: string,
  fields: Record<string, unknown>,
): Promise<GeneratedImage> {
  const id = catalogueIdOf(parts.catalogue, 'openai', model) ?? model
  const known = parts.catalogue.models.find((m) => m.id === id)
  if (!known?.capabilities.image_generation)
    throw invalid(`${model} is not a model of this Roster that generates images`)
  // Routed as a request to that model with the prompt as its input: guardrails, BYOK and content filters hold.
  const { route } = startRun(
    parts,
    { model: id, input: prompt, stream: false },
    { ...parent.opts, doorStream: undefined },
  )
  const candidates = route.candidates.filter((c) => IMAGE_PROTOCOLS.has(c.endpoint.protocol))
  if (!candidates.length) throw gatewayError('provider_unavailable', `no endpoint of ${id} serves OpenAI's Images API`)
  let last: GatewayError | undefined
  for (const c of candidates) {
    const timing: Timing = { sent: performance.now() }
    const sentAt = Date.now()
    const body = { ...fields, model: c.endpoint.upstream_model, prompt }
    let whole: Buffer | undefined
    try {
      whole = await parts.transport.call(c.endpoint, IMAGES, body, {
        cancel: parent.opts.cancel,
        tenant: parent.opts.tenant,
        onStart: () => (timing.firstByte = performance.now() - timing.sent),
      })
    } catch (err) {
      parent.tried.push({
        provider_name: c.endpoint.provider,
        status: err instanceof GatewayError ? err.status : null,
        latency: Math.round(performance.now() - timing.sent),
      })
      if (!(err instanceof GatewayError) || parent.opts.cancel?.aborted || !retryable(err)) throw err
      last = err
      continue
    }
    let answer: ImagesAnswer
    try {
      answer = JSON.parse(whole!.toString('utf8')) as ImagesAnswer
    } catch {
      answer = {}
    }
    const usage: Usage = {
      ...emptyUsage(),
      input: count(answer.usage?.input_tokens),
      output: count(answer.usage?.output_tokens),
    }
    // Answered 200: a generation however it reads (the provider likely charged for it).
    modelCall(parent, c, timing, sentAt, usage, 'stop', false)
    const cost = costPicoParts(c.endpoint.pricing ?? c.model.pricing, usage)
    parent.cost.input += usdOfPico(cost.input)
    parent.cost.output += usdOfPico(cost.output)
    const first = Array.isArray(answer.data) ? answer.data[0] : undefined
    const b64 = typeof first?.b64_json === 'string' ? first.b64_json : undefined
    const url = typeof first?.url === 'string' ? first.url : undefined
    if (!b64 && !url) throw gatewayError('provider_unavailable', `${c.endpoint.provider} answered no image`)
    return {
      model: id,
      ...(b64 ? { b64 } : {}),
      ...(url ? { url } : {}),
      ...(typeof first?.revised_prompt === 'string' ? { revisedPrompt: first.revised_prompt } : {}),
    }
  }
  throw last ?? gatewayError('provider_unavailable', `no endpoint of ${id} was left to try`)
}
