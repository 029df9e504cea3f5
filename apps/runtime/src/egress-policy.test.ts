import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { hostAllowed } from './egress-proxy.js'

describe("a gateway sandbox's allowed hosts", () => {
  it('match a name exactly, or a pattern where * is any run of characters, and nothing else', () => {
    expect(hostAllowed('pypi.org', ['pypi.org'])).toBe(true)
    expect(hostAllowed('files.pypi.org', ['pypi.org'])).toBe(false)
    expect(hostAllowed('files.pythonhosted.org', ['*.pythonhosted.org'])).toBe(true)
    expect(hostAllowed('pythonhosted.org', ['*.pythonhosted.org'])).toBe(false)
    expect(hostAllowed('PyPI.org.', ['pypi.org'])).toBe(true)
    expect(hostAllowed('pypixorg', ['pypi.org'])).toBe(false)
    expect(hostAllowed('anything.example', ['*'])).toBe(true)
    expect(hostAllowed('evil.com', [])).toBe(false)
  })

  it('never let a pattern without * reach a host it does not spell, whatever the characters', () => {
    fc.assert(
      fc.property(fc.domain(), fc.domain(), (pattern, host) => {
        if (hostAllowed(host, [pattern])) expect(host.toLowerCase()).toBe(pattern.toLowerCase())
      }),
    )
  })
})
