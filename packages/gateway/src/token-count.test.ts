import { describe, expect, it } from 'vitest'
import { counterFor, encodingOf, ESTIMATE } from './token-count.js'

describe("Roster's own count of a silent provider's tokens", () => {
  it("knows OpenAI's model families by their names, with or without a provider's prefix", () => {
    expect(encodingOf('gpt-4o-mini')).toBe('o200k_base')
    expect(encodingOf('openai/gpt-5.1-codex')).toBe('o200k_base')
    expect(encodingOf('o3-mini')).toBe('o200k_base')
    expect(encodingOf('gpt-oss-120b')).toBe('o200k_base')
    expect(encodingOf('gpt-4-turbo')).toBe('cl100k_base')
    expect(encodingOf('GPT-3.5-turbo-0125')).toBe('cl100k_base')
    for (const other of ['claude-sonnet-4-5', 'mistral-large-latest', 'llama-3.1-8b', 'gemini-2.5-pro', 'o1x'])
      expect(encodingOf(other)).toBe(other === 'o1x' ? 'o200k_base' : undefined)
  })

  it("counts with the family's tokenizer, text that looks like a special token as text", async () => {
    const o200k = await counterFor('gpt-4o')
    expect(o200k.by).toBe('o200k_base')
    expect(o200k.count('hello world')).toBe(2)
    expect(o200k.count('')).toBe(0)
    expect(o200k.count('<|endoftext|>')).toBeGreaterThan(1)
    const cl100k = await counterFor('gpt-4')
    expect(cl100k.by).toBe('cl100k_base')
    expect(cl100k.count('hello world')).toBe(2)
    // The same text, another encoding: the counts are each encoding's own.
    const text = 'Grüße aus Köln, 東京 and München'
    expect(o200k.count(text)).not.toBe(ESTIMATE.count(text))
  })

  it('estimates where no tokenizer is published: four bytes of UTF-8 a token', async () => {
    const counter = await counterFor('mistral-large-latest')
    expect(counter).toBe(ESTIMATE)
    expect(counter.count('abcdefgh')).toBe(2)
    expect(counter.count('é')).toBe(1)
  })
})
