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
    const count = async (model: string, ...texts: string[]) => (await counterFor(model)).countAll(texts)
    expect((await counterFor('gpt-4o')).by).toBe('o200k_base')
    expect(await count('gpt-4o', 'hello world')).toBe(2)
    expect(await count('gpt-4o', 'hello world', '', 'hello world')).toBe(4)
    expect(await count('gpt-4o', '<|endoftext|>')).toBeGreaterThan(1)
    expect((await counterFor('gpt-4')).by).toBe('cl100k_base')
    expect(await count('gpt-4', 'hello world')).toBe(2)
    // The same text, another encoding: the counts are each encoding's own.
    const text = 'Grüße aus Köln, 東京 and München'
    expect(await count('gpt-4o', text)).not.toBe(await ESTIMATE.countAll([text]))
  })

  it('tokenizes at most 16 KiB a call, in slices the process serves between, and counts the rest at the rate found', async () => {
    const prose = 'The quick brown fox jumps over the lazy dog. '
    const counter = await counterFor('gpt-4o')
    const sample = await (await counterFor('gpt-4o')).countAll([prose.repeat(100)])
    // A megabyte of prose: the first 16 KiB tokenized, the rest at that rate (within a token a sentence).
    const whole = await counter.countAll([prose.repeat(23_000)])
    expect(Math.abs(whole - sample * 230)).toBeLessThan(230)
    // A run with no spaces (BPE's worst case) and characters outside the BMP: bounded, and the process is served meanwhile.
    let ticks = 0
    const timer = setInterval(() => ticks++, 1)
    const started = performance.now()
    const runs = await (await counterFor('gpt-4o')).countAll(['a'.repeat(1_000_000), '\u{1F600}'.repeat(300_000)])
    clearInterval(timer)
    expect(runs).toBeGreaterThan(100_000)
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(ticks).toBeGreaterThan(0)
  })

  it('estimates where no tokenizer is published: four bytes of UTF-8 a token', async () => {
    const counter = await counterFor('mistral-large-latest')
    expect(counter).toBe(ESTIMATE)
    expect(await counter.countAll(['abcdefgh', 'é'])).toBe(3)
  })
})
