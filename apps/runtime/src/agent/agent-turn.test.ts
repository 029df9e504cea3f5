import { describe, expect, it } from 'vitest'
import { MODEL_CALL_RETRIES, retryWait, TurnFailed } from './agent-turn.js'

describe('when a refused model call is made again', () => {
  it('backs off from half a second, a quarter either way, twice at most', () => {
    const failed = new TurnFailed('the model call answered 503', 503)
    for (let i = 0; i < 50; i++) {
      expect(retryWait(failed, 1)).toBeGreaterThanOrEqual(375)
      expect(retryWait(failed, 1)).toBeLessThanOrEqual(625)
      expect(retryWait(failed, 2)).toBeGreaterThanOrEqual(750)
      expect(retryWait(failed, 2)).toBeLessThanOrEqual(1_250)
    }
    expect(MODEL_CALL_RETRIES).toBe(2)
    expect(retryWait(failed, 3)).toBeUndefined()
  })

  it('waits as Retry-After asks, and not at all when it asks for more than 8 s', () => {
    expect(retryWait(new TurnFailed('429', 429, 2_000), 1)).toBe(2_000)
    expect(retryWait(new TurnFailed('429', 429, 8_000), 2)).toBe(8_000)
    expect(retryWait(new TurnFailed('429', 429, 60_000), 1)).toBeUndefined()
  })

  it('never makes again a call refused for good, or one that failed for another reason', () => {
    for (const status of [400, 401, 402, 403, 404, 413])
      expect(retryWait(new TurnFailed('no', status), 1)).toBeUndefined()
    expect(retryWait(new Error('a bug'), 1)).toBeUndefined()
  })
})
