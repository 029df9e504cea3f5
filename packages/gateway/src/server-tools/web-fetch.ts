import { Agent, request } from 'undici'
import { z } from 'zod'
import { FetchRefused, guardedLookup, readCapped, refusedLiteral } from './network-guard.js'
import { errorOf, type ServerToolKind } from './tool.js'

export interface WebFetchOptions {
  /** Fetch from private, loopback and link-local addresses too (off by default; tests and labs only). */
  allowPrivateNetworks: boolean
  maxBytes: number
  timeoutMs: number
}

const Domain = z
  .string()
  .min(1)
  .max(253)
  .transform((d) => d.toLowerCase().replace(/^\*?\./, ''))
const Parameters = z
  .object({
    allowed_domains: z.array(Domain).max(100).optional(),
    blocked_domains: z.array(Domain).max(100).optional(),
    /** OpenRouter's engine choice: Roster has one engine (its own fetch), whatever is named. */
    engine: z.string().max(32).optional(),
    max_content_tokens: z.int().min(1).max(1_000_000).optional(),
    max_uses: z.int().min(1).max(1_000).optional(),
  })
  .refine((p) => !(p.allowed_domains && p.blocked_domains), 'give allowed_domains or blocked_domains, not both')
type Parameters = z.infer<typeof Parameters>

/** Whether `host` is `domain` or one of its subdomains. */
const within = (host: string, domain: string) => host === domain || host.endsWith(`.${domain}`)

/** Why the entry's domain lists refuse `hostname`, or undefined when they let it through. */
function outsideDomains(hostname: string, p: Parameters): string | undefined {
  const host = hostname.toLowerCase().replace(/\.$/, '')
  if (p.allowed_domains && !p.allowed_domains.some((d) => within(host, d)))
    return `refused: ${host} is not among the allowed domains (${p.allowed_domains.join(', ')})`
  if (p.blocked_domains?.some((d) => within(host, d))) return `refused: ${host} is a blocked domain`
  return undefined
}

/** An HTML page's <title>, when it has one. */
function titleOf(html: string): { title?: string } {
  const m = /<title[^>]*>([^<]{1,500})<\/title>/i.exec(html)
  const title = m?.[1]?.replace(/\s+/g, ' ').trim()
  return title ? { title } : {}
}

/** `openrouter:web_fetch`: a public page or file over HTTP(S), redirects followed, through the network guard. */
export function webFetch(options: WebFetchOptions): ServerToolKind<Parameters> {
  const agent = new Agent({ connect: { timeout: options.timeoutMs, lookup: guardedLookup(options) } })
  return {
    type: 'openrouter:web_fetch',
    parameters: Parameters,
    offer: (parameters) => ({
      type: 'openrouter:web_fetch',
      maxUses: parameters.max_uses,
      definition: {
        name: 'web_fetch',
        description: 'Fetches a public web page or file over HTTP(S) and returns its text (truncated when long).',
        parameters: {
          type: 'object',
          properties: { url: { type: 'string', format: 'uri', description: 'http or https URL' } },
          required: ['url'],
          additionalProperties: false,
        },
      },
      async run(args, { signal }) {
        let url: URL
        try {
          url = new URL(String(args.url ?? ''))
        } catch {
          return { error: 'url is not a valid URL' }
        }
        for (let hop = 0; hop <= 3; hop++) {
          if (url.protocol !== 'http:' && url.protocol !== 'https:')
            return { error: `only http and https URLs are fetched, not ${url.protocol}` }
          const refused = refusedLiteral(url.hostname, options)
          if (refused) return { error: refused }
          const outside = outsideDomains(url.hostname, parameters)
          if (outside) return { error: outside }
          try {
            const res = await request(url, {
              method: 'GET',
              dispatcher: agent,
              signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]),
              headers: { 'user-agent': 'Roster-web_fetch/1', accept: 'text/*, application/json, */*;q=0.5' },
              headersTimeout: options.timeoutMs,
              bodyTimeout: options.timeoutMs,
            })
            const location = res.headers.location
            if (res.statusCode >= 300 && res.statusCode < 400 && location) {
              await res.body.dump()
              url = new URL(String(location), url)
              continue
            }
            const cap = parameters.max_content_tokens
              ? Math.min(options.maxBytes, parameters.max_content_tokens * 4)
              : options.maxBytes
            const { text, truncated } = await readCapped(res.body, cap)
            const type = String(res.headers['content-type'] ?? '')
            return {
              url: url.href,
              status: res.statusCode,
              content_type: type,
              ...(type.includes('html') ? titleOf(text) : {}),
              content: text,
              truncated,
            }
          } catch (err) {
            const cause = (err as { cause?: unknown }).cause ?? err
            if (cause instanceof FetchRefused || err instanceof FetchRefused)
              return { error: `refused: ${(cause as Error).message}` }
            return { error: `fetch failed: ${(err as Error).message}` }
          }
        }
        return { error: 'too many redirects' }
      },
      itemFields(args, output) {
        const o = (output ?? {}) as { url?: string; status?: number; title?: string; content?: string }
        const error = errorOf(output)
        return {
          url: o.url ?? String(args.url ?? ''),
          ...(o.title ? { title: o.title } : {}),
          ...(o.content !== undefined ? { content: o.content } : {}),
          ...(o.status !== undefined ? { httpStatus: o.status } : {}),
          ...(error ? { error } : {}),
        }
      },
    }),
  }
}
