import { createHash, timingSafeEqual } from 'node:crypto'

// Comparing what a caller presents with a secret: both as SHA-256 digests, compared in constant
// time, so neither the comparison's time nor its length check tells anything of the secret.

/** A secret's (or a presented value's) SHA-256 digest. */
export const secretDigest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()

/** Constant-time digest comparison (digests of another length simply differ). */
export function digestsEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}

/** Whether `given` is the secret whose digest is `expected`. */
export const isSecret = (given: string | undefined, expected: Uint8Array): boolean =>
  given !== undefined && digestsEqual(secretDigest(given), expected)
