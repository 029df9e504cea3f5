import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { normaliseHost, SecretName, SecretWrite } from './secrets.js'

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/)
const hostname = fc
  .array(label, { minLength: 1, maxLength: 4 })
  .map((l) => l.join('.'))
  .filter((h) => !/^[0-9]+$/.test(h.split('.').at(-1)!))

describe('secret names', () => {
  it('takes the contract examples and refuses its counter-examples', () => {
    for (const ok of ['github_token', 'db2_password', 'a', 'copy', `a${'b'.repeat(254)}`])
      expect(SecretName.safeParse(ok).success, ok).toBe(true)
    for (const bad of ['GitHub-Token', '_token', 'a__b', 'token_', '1abc', '', `a${'b'.repeat(255)}`, 'a b', 'é'])
      expect(SecretName.safeParse(bad).success, bad).toBe(false)
  })

  it('accepts exactly what the contract pattern does, for any string', () => {
    const pattern = /^(?!.*__)[a-z]([a-z0-9_]*[a-z0-9])?$/
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(...'ab_9Z-'.split('')), maxLength: 12 }),
        (s) => SecretName.safeParse(s).success === (pattern.test(s) && s.length <= 255),
      ),
    )
  })
})

describe('host normalisation', () => {
  it('lowercases, drops one trailing dot, and is idempotent; a valid hostname survives it unchanged', () => {
    fc.assert(
      fc.property(hostname, fc.boolean(), fc.boolean(), (host, upper, dot) => {
        const given = `${upper ? host.toUpperCase() : host}${dot ? '.' : ''}`
        const result = normaliseHost(given)
        expect(result).toEqual({ host })
        expect(normaliseHost(host)).toEqual({ host })
      }),
    )
  })

  it('never passes a scheme, port, path, wildcard, IP address or empty name, whatever is around it', () => {
    fc.assert(
      fc.property(
        hostname,
        fc.constantFrom('https://', 'http://'),
        fc.constantFrom(':443', ':8080', '/v1', '/'),
        (host, scheme, tail) => {
          for (const bad of [`${scheme}${host}`, `${host}${tail}`, `*.${host}`, `${host}*`])
            expect('error' in normaliseHost(bad), bad).toBe(true)
        },
      ),
    )
    for (const bad of [
      '',
      '.',
      '10.0.0.1',
      '127.0.0.1.',
      '[::1]',
      '::1',
      'a..b',
      '-a.com',
      'a-.com',
      `${'a'.repeat(64)}.com`,
      `${'a.'.repeat(127)}a`,
    ]) {
      expect('error' in normaliseHost(bad), JSON.stringify(bad)).toBe(true)
    }
  })

  it('collapses hosts equal after normalisation, keeping the first order', () => {
    const parsed = SecretWrite.parse({
      value: 'v',
      hosts: ['API.example.com', 'api.example.com.', 'b.example.com', 'api.example.com'],
    })
    expect(parsed.hosts).toEqual(['api.example.com', 'b.example.com'])
  })
})
