import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'

// AES-256-GCM sealing for envelope encryption: a vault's data key is sealed with the master key,
// and each secret with its vault's data key. Layout: version(1) | iv(12) | tag(16) | ciphertext.
const VERSION = 1

export function seal(key: Buffer, plaintext: Buffer, aad: string): Buffer {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(aad))
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body])
}

export function unseal(key: Buffer, sealed: Buffer, aad: string): Buffer {
  if (sealed[0] !== VERSION || sealed.length < 29) throw new Error('sealed value has an unknown layout')
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 13))
  decipher.setAAD(Buffer.from(aad))
  decipher.setAuthTag(sealed.subarray(13, 29))
  return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()])
}

/** Identifies a master key without revealing it, so a mismatched key is detected before use. */
export function masterKeyFingerprint(masterKey: Buffer): Buffer {
  return createHmac('sha256', masterKey).update('roster vault master key fingerprint v1').digest()
}

/** HMAC of a secret's value under its vault's data key: comparable within one vault only. */
export function secretFingerprint(dataKey: Buffer, value: string): string {
  return createHmac('sha256', dataKey).update(value).digest('hex').slice(0, 32)
}
