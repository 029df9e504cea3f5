import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { masterKeyFingerprint, seal, unseal } from './seal.js'

describe('seal / unseal', () => {
  it('round-trips any value', () => {
    const key = randomBytes(32)
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), fc.string(), (bytes, aad) => {
        expect(unseal(key, seal(key, Buffer.from(bytes), aad), aad)).toEqual(Buffer.from(bytes))
      }),
    )
  })

  it('refuses another key, another context, or a flipped bit', () => {
    const key = randomBytes(32)
    const sealed = seal(key, Buffer.from('secret'), 'vault:1')
    expect(() => unseal(randomBytes(32), sealed, 'vault:1')).toThrow()
    expect(() => unseal(key, sealed, 'vault:2')).toThrow()
    const tampered = Buffer.from(sealed)
    tampered[tampered.length - 1]! ^= 1
    expect(() => unseal(key, tampered, 'vault:1')).toThrow()
  })

  it('never contains the plaintext, and seals the same value differently each time', () => {
    const key = randomBytes(32)
    const a = seal(key, Buffer.from('hunter2-hunter2'), 'x')
    const b = seal(key, Buffer.from('hunter2-hunter2'), 'x')
    expect(a.includes(Buffer.from('hunter2'))).toBe(false)
    expect(a.equals(b)).toBe(false)
  })

  it('fingerprints keys stably and distinctly', () => {
    const key = randomBytes(32)
    expect(masterKeyFingerprint(key)).toEqual(masterKeyFingerprint(Buffer.from(key)))
    expect(masterKeyFingerprint(key)).not.toEqual(masterKeyFingerprint(randomBytes(32)))
  })
})
