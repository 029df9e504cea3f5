import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { estimateInputTokens } from './token-estimate.js'

describe('estimateInputTokens', () => {
  it('counts about four bytes of text a token, and a few a message', () => {
    // 400 ASCII bytes: 100 tokens, and 4 for the message around them.
    expect(estimateInputTokens({ input: 'abcd'.repeat(100) })).toBe(104)
    // Multi-byte text counts by its UTF-8 bytes (3 a character here).
    expect(estimateInputTokens({ input: '日本語'.repeat(4) })).toBe(9 + 4)
    expect(estimateInputTokens({ input: 'hi', instructions: 'Be brief.' })).toBe(1 + 4 + 3 + 4)
  })

  it('counts an image as one tile whatever its bytes, and a file by its decoded size (and the role, 1)', () => {
    const image = (url: string) => ({
      input: [{ type: 'message', role: 'user', content: [{ type: 'input_image', image_url: url }] }],
    })
    expect(estimateInputTokens(image('data:image/png;base64,' + 'A'.repeat(100_000)))).toBe(765 + 1 + 4)
    expect(estimateInputTokens(image('https://example.com/a.png'))).toBe(765 + 1 + 4)
    const file = {
      input: [{ type: 'message', role: 'user', content: [{ type: 'input_file', file_data: 'A'.repeat(4000) }] }],
    }
    expect(estimateInputTokens(file)).toBe(750 + 1 + 4)
  })

  it('counts tool definitions, and never says 0 or fails on any JSON input', () => {
    const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object' } }] as never
    expect(estimateInputTokens({ input: 'hi', tools })).toBeGreaterThan(estimateInputTokens({ input: 'hi' }))
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const n = estimateInputTokens({ input: [v] as never })
        expect(Number.isInteger(n) && n >= 1).toBe(true)
      }),
    )
  })
})
