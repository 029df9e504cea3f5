import { randomBytes } from 'node:crypto'
import { secretDigest } from '@roster/platform'

export const ApiKeyKinds = ['user', 'organization', 'management', 'intern'] as const
export type ApiKeyKind = (typeof ApiKeyKinds)[number]

const PREFIX = 'sk-roster-v1-'
/** How every API key Roster makes begins (so a log or an audit event can recognise one). */
export const API_KEY_PREFIX = PREFIX

/** A new key: 32 random bytes. Only the SHA-256 digest is stored; the plaintext is shown once. */
export function generateApiKey(): { plaintext: string; hash: Buffer; prefix: string } {
  return apiKeyParts(PREFIX + randomBytes(32).toString('base64url'))
}

/** A key's stored parts: its digest, and the first characters that are safe to show. */
export function apiKeyParts(plaintext: string): { plaintext: string; hash: Buffer; prefix: string } {
  return { plaintext, hash: hashApiKey(plaintext), prefix: plaintext.slice(0, PREFIX.length + 6) }
}

/**
 * The lookup digest. A fast hash is right here: keys carry 256 bits of entropy, so there is nothing
 * for a slow password hash to protect against, and every request pays for it.
 */
export const hashApiKey = (plaintext: string): Buffer => secretDigest(plaintext)

/** The bearer token of an Authorization header, or undefined when absent or malformed. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
  return match?.[1]
}
