import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { canonicalGenerationId } from './generations.js'
import { costPico, limitNames, limitPeriod, picoOf, spendCounter, type SpendLimit } from './spend.js'

describe('costs in pico-dollars', () => {
  it('reads decimal prices exactly, plain or with an exponent', () => {
    expect(picoOf('0.000001')).toBe(1_000_000n)
    expect(picoOf('0.00000015')).toBe(150_000n)
    expect(picoOf('1.5e-7')).toBe(150_000n)
    expect(picoOf('2')).toBe(2_000_000_000_000n)
    expect(picoOf('0')).toBe(0n)
    expect(picoOf('0.0000000000001')).toBe(0n)
  })

  it('prices cached, reasoning and request parts by their own prices', () => {
    const prices = {
      input: '0.000001',
      cached_input: '0.0000001',
      output: '0.000002',
      reasoning: '0.000003',
      request: '0.001',
    }
    expect(costPico(prices, { input: 100, cached: 40, output: 50, reasoning: 20 })).toBe(
      60n * 1_000_000n + 40n * 100_000n + 30n * 2_000_000n + 20n * 3_000_000n + 1_000_000_000n,
    )
    // Without a reasoning price, reasoning tokens are output tokens.
    expect(costPico({ input: '0.000001', output: '0.000002' }, { input: 1, cached: 0, output: 10, reasoning: 4 })).toBe(
      1_000_000n + 20_000_000n,
    )
  })

  it('prices cache writes at their own price, within the input, and as input where none is given', () => {
    const prices = { input: '0.000001', cached_input: '0.0000001', cache_write: '0.00000125', output: '0.000002' }
    // OpenAI's report: 1220 input tokens, 1217 of them written to the cache.
    expect(costPico(prices, { input: 1220, cached: 0, cacheWrite: 1217, output: 0, reasoning: 0 })).toBe(
      3n * 1_000_000n + 1217n * 1_250_000n,
    )
    expect(costPico(prices, { input: 100, cached: 40, cacheWrite: 50, output: 0, reasoning: 0 })).toBe(
      10n * 1_000_000n + 40n * 100_000n + 50n * 1_250_000n,
    )
    // Never more writes than the input holds beside what was read.
    expect(costPico(prices, { input: 10, cached: 8, cacheWrite: 50, output: 0, reasoning: 0 })).toBe(
      8n * 100_000n + 2n * 1_250_000n,
    )
    expect(
      costPico(
        { input: '0.000001', output: '0.000002' },
        { input: 10, cached: 0, cacheWrite: 10, output: 0, reasoning: 0 },
      ),
    ).toBe(10n * 1_000_000n)
  })

  it('adds up without drift: the sum of many calls is the cost of their tokens together', () => {
    const prices = { input: '0.00000015', output: '0.0000006' }
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(100_000), fc.nat(100_000)), { maxLength: 50 }), (calls) => {
        const each = calls.reduce(
          (sum, [i, o]) => sum + costPico(prices, { input: i, cached: 0, output: o, reasoning: 0 }),
          0n,
        )
        const input = calls.reduce((s, [i]) => s + i, 0)
        const output = calls.reduce((s, [, o]) => s + o, 0)
        expect(each).toBe(costPico(prices, { input, cached: 0, output, reasoning: 0 }))
      }),
    )
  })
})

describe('ids and periods', () => {
  it('finds a generation by any door’s form of its id', () => {
    expect(canonicalGenerationId('chatcmpl-abc-2')).toBe('resp_abc-2')
    expect(canonicalGenerationId('msg_abc')).toBe('resp_abc')
    expect(canonicalGenerationId('resp_abc')).toBe('resp_abc')
  })

  it('counts a limit over its window', () => {
    const at = new Date('2026-11-26T10:00:00Z')
    expect(limitPeriod({ reset: 'daily' }, at)).toBe('d2026-11-26')
    expect(limitPeriod({ reset: 'weekly' }, at)).toBe('w2026-11-23')
    expect(limitPeriod({ reset: 'monthly' }, at)).toBe('m2026-11')
    expect(limitPeriod({ reset: null }, at)).toBe('all')
  })

  it('names a limit’s counter and ledger row once per limit and UTC day, the same strings for every request', () => {
    const names = limitNames('{p}')
    const limit: SpendLimit = { owner: 'o-1', of: 'key', pico: 1n, reset: 'weekly', includeByok: true }
    const monday = Date.parse('2026-11-23T00:00:00Z')
    const first = names(limit, monday + 1)
    expect(first).toMatchObject({
      period: 'w2026-11-23',
      counter: spendCounter('{p}', limit, 'w2026-11-23'),
      ledger: 'o-1/w2026-11-23',
    })
    expect(names(limit, monday + 86_399_999)).toBe(first)
    // A new UTC day is worked out again (the same week here), and a new week moves the names.
    const tuesday = names(limit, monday + 86_400_000)
    expect(tuesday).not.toBe(first)
    expect(tuesday.counter).toBe(first.counter)
    expect(names(limit, monday + 7 * 86_400_000).ledger).toBe('o-1/w2026-11-30')
    // A changed limit is a new object: its own names.
    expect(names({ ...limit, includeByok: false }, monday + 1).counter).toBe('{p}:spend:o-1:w2026-11-23')
  })
})
