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
    expect(retryWait(new TurnFailed('429', 429, { retryAfterMs: 2_000 }), 1)).toBe(2_000)
    expect(retryWait(new TurnFailed('429', 429, { retryAfterMs: 8_000 }), 2)).toBe(8_000)
    expect(retryWait(new TurnFailed('429', 429, { retryAfterMs: 60_000 }), 1)).toBeUndefined()
  })

  it('takes the API’s word for whether trying again may help, before the status’s', () => {
    // A 500 the API says retrying will not mend (its configuration_error row).
    const misconfigured = new TurnFailed('500', 500, {
      error: { metadata: { reason: 'configuration_error', retryable: false, error_type: 'server' } },
    })
    expect(misconfigured.retryable).toBe(false)
    expect(retryWait(misconfigured, 1)).toBeUndefined()
    // The gateway's envelope names a canonical type only: its row decides.
    expect(new TurnFailed('503', 503, { error: { metadata: { error_type: 'provider_overloaded' } } }).retryable).toBe(
      true,
    )
    expect(
      new TurnFailed('400', 400, { error: { metadata: { error_type: 'context_length_exceeded' } } }).retryable,
    ).toBe(false)
  })

  it('never makes again a call refused for good, or one that failed for another reason', () => {
    for (const status of [400, 401, 402, 403, 404, 413])
      expect(retryWait(new TurnFailed('no', status), 1)).toBeUndefined()
    expect(retryWait(new Error('a bug'), 1)).toBeUndefined()
  })
})
