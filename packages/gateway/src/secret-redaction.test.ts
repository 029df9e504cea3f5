import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { redactDeep, redactSecrets } from './secret-redaction.js'

describe('the secrets private logging never keeps', () => {
  it('replaces each known shape where it stands, keeping the text around it', () => {
    expect(redactSecrets('use sk-proj-abcdefghijklmnop1234 now')).toBe('use [redacted] now')
    expect(redactSecrets('my key is sk-roster-v1-Yj1WNWi1mlnEGpxPWIP_VLKo8TOWThZxQD6Ja6iD4iA.')).toBe(
      'my key is [redacted].',
    )
    expect(redactSecrets('Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc.def')).toBe('Authorization: Bearer [redacted]')
    expect(redactSecrets('AKIAIOSFODNN7EXAMPLE and ghp_0123456789abcdefghijklmnopqrstuvwxyz')).toBe(
      '[redacted] and [redacted]',
    )
    expect(redactSecrets('-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----')).toBe('[redacted]')
    expect(redactSecrets('a skeleton key, a task-list, sk-short')).toBe('a skeleton key, a task-list, sk-short')
  })

  it('reaches every string of a JSON value, and leaves one with no secret as it was', () => {
    expect(redactDeep({ messages: [{ role: 'user', content: 'sk-ant-api03-aaaaaaaaaaaaaaaaaaaa' }], n: 1 })).toEqual({
      messages: [{ role: 'user', content: '[redacted]' }],
      n: 1,
    })
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = JSON.stringify(v)
        if (!/sk-|Bearer|AKIA|ASIA|gh[pousr]_|glpat-|xox|AIza|PRIVATE KEY/i.test(text)) expect(redactDeep(v)).toEqual(v)
      }),
    )
  })
})
