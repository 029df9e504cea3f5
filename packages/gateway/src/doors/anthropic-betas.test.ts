import { describe, expect, it } from 'vitest'
import { checkAnthropicBetas, unservedBetas } from './anthropic-betas.js'

describe('anthropic-beta', () => {
  it('names the features Roster does not serve, once each, from one header or several', () => {
    expect(unservedBetas(undefined)).toEqual([])
    expect(unservedBetas('claude-code-20250219, mid-conversation-system-2026-04-07')).toEqual([])
    expect(unservedBetas(['files-api-2025-04-14,claude-code-20250219', ' files-api-2025-04-14 ,x-1'])).toEqual([
      'files-api-2025-04-14',
      'x-1',
    ])
  })

  it("refuses them in Anthropic's words", () => {
    expect(() => checkAnthropicBetas('skills-2025-10-02')).toThrow(
      /^Unexpected value\(s\) `skills-2025-10-02` for the `anthropic-beta` header\. /,
    )
    expect(() => checkAnthropicBetas('prompt-caching-2024-07-31')).not.toThrow()
  })
})
