import { Agent, request } from 'undici'
import { gatewayError } from './errors.js'
import { readCapped } from './server-tools/network-guard.js'

// A moderation service Roster asks before a request's model sees its input (the `moderation`
// plugin): any server speaking OpenAI's moderations API (`POST {url}/moderations`, `{model,
// input: [...]}` → `{results: [{flagged, categories}]}`): OpenAI's own, or one a team runs
// (LiteLLM, an OpenAI-compatible gateway, a local classifier behind that API).

export interface ModerationOptions {
  /** The API's base, e.g. https://api.openai.com/v1 (its `/moderations` is called). */
  url: string
  apiKey?: string
  model: string
  timeoutMs: number
}

/** What to moderate: each message's text, and its images (URLs or data: URLs), in order. */
export type ModerationInput = { text: string; images: string[] }[]

/** A flagged input: which of the inputs, and the categories it was flagged for. */
export interface Flagged {
  index: number
  reasons: string[]
}

/** Most of a moderation answer read. */
const MAX_ANSWER = 1024 * 1024

export class Moderator {
  private readonly agent: Agent
  constructor(private readonly options: ModerationOptions) {
    // The operator's own service may well be on a private address: its address is the operator's choice.
    this.agent = new Agent({ connect: { timeout: options.timeoutMs } })
  }

  /** The first input the service flags (undefined: none). A service that fails refuses the request (502), never lets it through unchecked. */
  async flagged(inputs: ModerationInput, signal: AbortSignal): Promise<Flagged | undefined> {
    const entries = inputs.map((i, index) => ({ ...i, index })).filter((i) => i.text.trim() || i.images.length)
    if (!entries.length) return undefined
    // OpenAI's multi-modal form where there are images; its plain list of strings otherwise.
    const input = entries.some((e) => e.images.length)
      ? entries.flatMap((e) => [
          ...(e.text ? [{ type: 'text', text: e.text }] : []),
          ...e.images.map((url) => ({ type: 'image_url', image_url: { url } })),
        ])
      : entries.map((e) => e.text)
    const url = `${this.options.url.replace(/\/+$/, '')}/moderations`
    let answer: { results?: { flagged?: unknown; categories?: Record<string, unknown> }[] }
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: this.options.model, input }),
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.options.timeoutMs)]),
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
      })
      const { text, truncated } = await readCapped(res.body, MAX_ANSWER)
      if (res.statusCode !== 200) throw new Error(`it answered ${res.statusCode}: ${text.slice(0, 200)}`)
      if (truncated) throw new Error('it answered more than Roster reads')
      answer = JSON.parse(text) as typeof answer
    } catch (err) {
      if (signal.aborted) throw err
      throw gatewayError('provider_unavailable', `the moderation service could not be asked: ${(err as Error).message}`)
    }
    const results = Array.isArray(answer?.results) ? answer.results : []
    // With images, one result covers the whole list (OpenAI's multi-modal form): it is the first entry's.
    const at = (i: number) => (input.length === entries.length ? entries[i]?.index : entries[0]?.index) ?? 0
    for (const [i, r] of results.entries()) {
      if (r?.flagged !== true) continue
      const reasons = Object.entries(r.categories ?? {})
        .filter(([, on]) => on === true)
        .map(([name]) => name)
      return { index: at(i), reasons }
    }
    return undefined
  }

  close() {
    return this.agent.close()
  }
}
