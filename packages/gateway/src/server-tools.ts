import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import { Agent, request } from 'undici'
import type { FunctionDef } from './adapters/adapter.js'

// Server tools: tools Roster itself runs between model turns. Offered as `openrouter:<name>`;
// the model sees them as ordinary functions; the client sees a result item per call.

export interface ServerTool {
  definition: FunctionDef
  /** Runs with the model's arguments (an object; what is in it is the model's and is checked). */
  run(args: Record<string, unknown>, signal: AbortSignal): Promise<unknown>
}

export interface WebFetchOptions {
  /** Fetch from private, loopback and link-local addresses too (off by default; tests and labs only). */
  allowPrivateNetworks: boolean
  maxBytes: number
  timeoutMs: number
}

const datetime: ServerTool = {
  definition: {
    name: 'datetime',
    description: 'The current date and time, in an IANA time zone (UTC unless given).',
    parameters: {
      type: 'object',
      properties: { timezone: { type: 'string', description: 'IANA time zone, e.g. Europe/Paris' } },
      additionalProperties: false,
    },
  },
  async run(args) {
    const asked = typeof args.timezone === 'string' && args.timezone ? args.timezone : 'UTC'
    const now = new Date()
    const local = (timeZone: string) =>
      new Intl.DateTimeFormat('sv-SE', { timeZone, dateStyle: 'short', timeStyle: 'medium' }).format(now)
    const base = { datetime: now.toISOString(), unix: Math.floor(now.getTime() / 1000) }
    try {
      return { ...base, timezone: asked, local: local(asked) }
    } catch {
      // The model still gets the time, and learns why it is not in the zone it asked for.
      return { ...base, timezone: 'UTC', local: local('UTC'), note: `unknown time zone ${asked}; UTC shown` }
    }
  },
}

// Addresses a fetch must never reach unless allowed: private, loopback, link-local, shared,
// documentation, multicast and other special-purpose ranges (IANA's registries). Two lists, one per
// family: Node's BlockList applies an IPv4-mapped IPv6 rule (::ffff:0:0/96) to every IPv4 address,
// so one list holding both refused every IPv4 host.
const FORBIDDEN_V4 = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const
// ::/96 holds :: and ::1 and the old IPv4-compatible form; ::ffff:0:0/96 is IPv4-mapped (refused
// whole, whatever it maps to); 64:ff9b::/96 and 64:ff9b:1::/48 translate to IPv4; 2001::/23 holds
// Teredo and other protocol assignments; 2002::/16 is 6to4, which embeds an IPv4 address.
const FORBIDDEN_V6 = [
  ['::', 96],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const
const forbiddenV4 = new BlockList()
for (const [net, bits] of FORBIDDEN_V4) forbiddenV4.addSubnet(net, bits, 'ipv4')
const forbiddenV6 = new BlockList()
for (const [net, bits] of FORBIDDEN_V6) forbiddenV6.addSubnet(net, bits, 'ipv6')

/** Whether web_fetch refuses to connect to this IP address (anything that is not an IP address is refused). */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return forbiddenV4.check(address, 'ipv4')
  if (family === 6) return forbiddenV6.check(address, 'ipv6')
  return true
}

export class FetchRefused extends Error {}

/**
 * Why a connection to `hostname` is refused when it is itself an address (an IP literal, bracketed
 * or not): a connection to a literal never asks the lookup, so guardedLookup cannot see it.
 */
export function refusedLiteral(hostname: string, options: { allowPrivateNetworks: boolean }): string | undefined {
  const host = hostname.replace(/^\[|\]$/g, '')
  if (isIP(host) && isForbiddenAddress(host) && !options.allowPrivateNetworks)
    return `refused: ${host} is a private or loopback address`
  return undefined
}

/**
 * A connection's DNS lookup that refuses private, loopback and similar addresses (unless allowed):
 * the address checked is the one connected to, with no second resolution a rebinding DNS server
 * could answer differently. `hosts` answers some names with fixed addresses (tests map their
 * hostnames to the loopback).
 */
export function guardedLookup(options: {
  allowPrivateNetworks: boolean
  hosts?: Record<string, string>
}): LookupFunction {
  return (hostname, opts, callback) => {
    const decide = (list: LookupAddress[]) => {
      const bad = list.find((a) => isForbiddenAddress(a.address))
      if (bad && !options.allowPrivateNetworks)
        return callback(
          new FetchRefused(`${hostname} resolves to ${bad.address}, a private or loopback address`),
          '',
          0,
        )
      if (opts.all) return callback(null, list)
      callback(null, list[0]!.address, list[0]!.family)
    }
    const fixed = options.hosts?.[hostname]
    if (fixed) return decide([{ address: fixed, family: fixed.includes(':') ? 6 : 4 }])
    dnsLookup(hostname, { ...opts, all: true }, (err, addresses) => (err ? callback(err, '', 0) : decide(addresses)))
  }
}

/** A response body as text, at most `maxBytes` of it (the rest is not read: the body is destroyed). */
export async function readCapped(
  body: AsyncIterable<Buffer> & { destroy(): unknown },
  maxBytes: number,
): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    const room = maxBytes - size
    chunks.push(chunk.subarray(0, room))
    size += Math.min(room, chunk.length)
    if (chunk.length > room) {
      body.destroy()
      return { text: Buffer.concat(chunks).toString('utf8'), truncated: true }
    }
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated: false }
}

function guardedAgent(options: WebFetchOptions) {
  return new Agent({ connect: { timeout: options.timeoutMs, lookup: guardedLookup(options) } })
}

function webFetch(options: WebFetchOptions): ServerTool {
  const agent = guardedAgent(options)
  return {
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
    async run(args, signal) {
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
          const { text, truncated } = await readCapped(res.body, options.maxBytes)
          return {
            url: url.href,
            status: res.statusCode,
            content_type: String(res.headers['content-type'] ?? ''),
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
  }
}

/** The server tools this Roster serves, by the name the request uses (`openrouter:<name>`). */
export function serverTools(options: WebFetchOptions): Map<string, ServerTool> {
  return new Map([
    ['openrouter:datetime', datetime],
    ['openrouter:web_fetch', webFetch(options)],
  ])
}
