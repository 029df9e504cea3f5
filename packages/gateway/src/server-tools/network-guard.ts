import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'

// What a server tool that reaches out (web_fetch, the search backends) may connect to: public
// addresses only, unless an operator allows private networks (tests and labs).

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
