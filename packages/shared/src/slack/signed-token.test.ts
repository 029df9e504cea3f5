import { describe, expect, it } from 'vitest'
import { checkToken, signToken } from './signed-token.js'

const key = Buffer.alloc(32, 7)

describe('signed tokens (install links, OAuth state)', () => {
  it('carry their payload for their purpose until they expire', () => {
    const t = signToken(key, 'oauth-state', { intern: 'i', nonce: 'n' }, 60)
    expect(checkToken(key, 'oauth-state', t)).toEqual({ ok: true, payload: { intern: 'i', nonce: 'n' } })
    expect(checkToken(key, 'install-link', t)).toEqual({ ok: false, why: 'forged' })
    expect(checkToken(Buffer.alloc(32, 8), 'oauth-state', t)).toEqual({ ok: false, why: 'forged' })
    // Expired, it still names whom it was for (it is Roster's own): why can be kept on that intern's link.
    expect(checkToken(key, 'oauth-state', signToken(key, 'oauth-state', { intern: 'i' }, -1))).toEqual({
      ok: false,
      why: 'expired',
      payload: { intern: 'i' },
    })
  })

  it('refuse anything else without throwing', () => {
    const t = signToken(key, 'p', { a: 'b' }, 60)
    const [body, sig] = t.split('.')
    const other = Buffer.from(JSON.stringify({ a: 'c', exp: 9e9 })).toString('base64url')
    for (const bad of [undefined, '', 'x', `${t}.x`, `${other}.${sig}`, `${body}.`, 'a'.repeat(3000), '.'])
      expect(checkToken(key, 'p', bad).ok, String(bad).slice(0, 40)).toBe(false)
  })
})
