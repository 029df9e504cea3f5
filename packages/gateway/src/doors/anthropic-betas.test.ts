import { describe, expect, it } from 'vitest'
import { anthropicExtras, betasOf } from './anthropic-betas.js'

describe('anthropic-beta', () => {
  it('reads every name, once each, from one header or several, refusing none', () => {
    expect(betasOf(undefined)).toEqual([])
    expect(betasOf('claude-code-20250219, structured-outputs-2025-11-13')).toEqual([
      'claude-code-20250219',
      'structured-outputs-2025-11-13',
    ])
    expect(betasOf(['files-api-2025-04-14,thinking-token-count-2026-05-13', ' files-api-2025-04-14 ,x-1'])).toEqual([
      'files-api-2025-04-14',
      'thinking-token-count-2026-05-13',
      'x-1',
    ])
  })

  it('refuses what is no name at all, and more names than any client sends', () => {
    expect(() => betasOf('a b')).toThrow(/comma-separated tokens/)
    expect(() => betasOf('ok,\u00e9')).toThrow(/comma-separated tokens/)
    expect(() => betasOf(Array.from({ length: 65 }, (_, i) => `b-${i}`).join(','))).toThrow(/more than 64/)
  })

  it("hands the engine the betas and the body's Anthropic-only fields, and nothing when there are none", () => {
    expect(anthropicExtras(undefined, { model: 'm', messages: [] })).toEqual({})
    expect(
      anthropicExtras('mcp-client-2025-04-04', { mcp_servers: [{ type: 'url', url: 'https://x' }], container: null }),
    ).toEqual({
      anthropic: { betas: ['mcp-client-2025-04-04'], fields: { mcp_servers: [{ type: 'url', url: 'https://x' }] } },
    })
  })
})
