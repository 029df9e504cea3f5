import { describe, expect, it } from 'vitest'
import { ADAPTERS, type Protocol } from './adapters/registry.js'
import { webSearchOf, type WebSearch } from './web-search.js'

/** The web search an endpoint of `protocol` is sent for what the client offered (its adapter's). */
const webSearchFor = (protocol: Protocol, search: WebSearch) => ADAPTERS[protocol].webSearch?.(search)

const of = (tool: Record<string, unknown>) => webSearchOf(tool)!

describe("a client's web search in each provider's protocol", () => {
  it("knows both providers' kinds, and no others", () => {
    for (const type of ['web_search', 'web_search_preview', 'web_search_2025_08_26', 'web_search_preview_2025_03_11'])
      expect(webSearchOf({ type })?.family).toBe('openai')
    for (const type of ['web_search_20250305', 'web_search_20260209'])
      expect(webSearchOf({ type, name: 'web_search' })?.family).toBe('anthropic')
    for (const type of ['openrouter:web_search', 'file_search', 'web_fetch_20250910'])
      expect(webSearchOf({ type })).toBeUndefined()
  })

  it("goes to the client's own provider as it came", () => {
    const codex = { type: 'web_search', external_web_access: false, search_context_size: 'low' }
    expect(webSearchFor('openai-responses', of(codex))).toEqual({ tool: codex })
    const claude = { type: 'web_search_20250305', name: 'web_search', max_uses: 8, blocked_domains: ['x.example'] }
    expect(webSearchFor('anthropic-messages', of(claude))).toEqual({ tool: claude })
  })

  it("is translated to the other provider's tool, field by field, location reduced to what both name", () => {
    const location = { type: 'approximate', city: 'Oslo', region: null, country: 'NO', timezone: 'Europe/Oslo' }
    expect(
      webSearchFor(
        'anthropic-messages',
        of({ type: 'web_search', filters: { allowed_domains: ['a.example'] }, user_location: location }),
      ),
    ).toEqual({
      tool: {
        type: 'web_search_20250305',
        name: 'web_search',
        allowed_domains: ['a.example'],
        user_location: { type: 'approximate', city: 'Oslo', country: 'NO', timezone: 'Europe/Oslo' },
      },
    })
    expect(
      webSearchFor('openai-responses', of({ type: 'web_search_20250305', name: 'web_search', max_uses: 2 })),
    ).toEqual({
      tool: { type: 'web_search' },
      maxCalls: 2,
    })
  })

  it('is not carried where a limit the client set would be lost, nor over Chat Completions', () => {
    expect(
      webSearchFor(
        'openai-responses',
        of({ type: 'web_search_20250305', name: 'web_search', blocked_domains: ['x.example'] }),
      ),
    ).toBeUndefined()
    expect(webSearchFor('anthropic-messages', of({ type: 'web_search', external_web_access: false }))).toBeUndefined()
    expect(webSearchFor('openai-chat', of({ type: 'web_search' }))).toBeUndefined()
    // An empty list restricts nothing.
    expect(
      webSearchFor('openai-responses', of({ type: 'web_search_20250305', name: 'web_search', blocked_domains: [] })),
    ).toEqual({
      tool: { type: 'web_search' },
    })
  })
})
