import { describe, expect, it } from 'vitest'
import { retryable, upstreamError } from './errors.js'

const body = (message: string, type = '') => JSON.stringify({ error: { message, type } })

describe('provider errors as canonical types', () => {
  it('maps statuses and provider error kinds, keeps Retry-After, never the credential', () => {
    const cases: [number, string, number, string][] = [
      [429, body('slow down'), 429, 'rate_limit_exceeded'],
      [400, body('This model\'s maximum context length is 8192 tokens'), 400, 'context_length_exceeded'],
      [400, body('prompt is too long: 200000 tokens', 'invalid_request_error'), 400, 'context_length_exceeded'],
      [400, body('bad field'), 400, 'invalid_request'],
      [401, body('invalid x-api-key'), 502, 'authentication'],
      [403, body('nope'), 502, 'permission_denied'],
      [404, body('model not found'), 502, 'not_found'],
      [413, body('too big'), 413, 'payload_too_large'],
      [529, body('Overloaded', 'overloaded_error'), 503, 'provider_overloaded'],
      [503, '', 503, 'provider_overloaded'],
      [504, '', 504, 'timeout'],
      [500, 'not json', 502, 'provider_unavailable'],
    ]
    for (const [status, text, want, type] of cases) {
      const e = upstreamError('acme', status, text)
      expect([e.status, e.errorType], `${status} ${text}`).toEqual([want, type])
    }
    expect(upstreamError('acme', 429, '', ['7']).retryAfter).toBe('7')
    expect(upstreamError('acme', 401, body('key sk-secret-123 is invalid')).message).not.toContain('sk-secret')
    expect(retryable(upstreamError('acme', 429, ''))).toBe(true)
    expect(retryable(upstreamError('acme', 400, ''))).toBe(false)
  })
})
