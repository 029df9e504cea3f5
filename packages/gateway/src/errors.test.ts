import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { describeIssues, explainIssue, retryable, upstreamError, type ZodIssueLike } from './errors.js'
import { ResponsesRequest } from './request.js'

const body = (message: string, type = '') => JSON.stringify({ error: { message, type } })

describe('provider errors as canonical types', () => {
  it('maps statuses and provider error kinds, keeps Retry-After, never the credential', () => {
    const cases: [number, string, number, string][] = [
      [429, body('slow down'), 429, 'rate_limit_exceeded'],
      [400, body("This model's maximum context length is 8192 tokens"), 400, 'context_length_exceeded'],
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
      // Out of funds or quota is Roster's credential's state, not the caller's: 502, so another endpoint may serve.
      [402, body('add credits'), 502, 'payment_required'],
      [429, body('You exceeded your current quota', 'insufficient_quota'), 502, 'payment_required'],
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

const issuesOf = (schema: z.ZodType, value: unknown) => {
  const parsed = schema.safeParse(value)
  if (parsed.success) throw new Error('expected the value to be refused')
  return parsed.error.issues as unknown as ZodIssueLike[]
}
const explain = (value: object) => issuesOf(ResponsesRequest, { model: 'a/b', input: 'x', ...value }).map(explainIssue)

describe('zod issues in error messages', () => {
  it('describeIssues names the broken rule, for presets and provider preferences alike', () => {
    const parsed = ResponsesRequest.safeParse({
      model: 'a/b',
      stop: ['a', 'b', 'c', 'd', 'e'],
      metadata: { 'a[b]': 'c' },
    })
    expect(describeIssues(parsed.error!)).toBe(
      'stop: at most 4 stop sequences; metadata.a[b]: invalid key: metadata keys may not contain brackets',
    )
  })

  it('names the broken rule of the one union member whose type matched', () => {
    expect(explain({ stop: ['a', 'b', 'c', 'd', 'e'] })).toEqual([
      { path: ['stop'], message: 'at most 4 stop sequences' },
    ])
  })

  it('names the types a value could have had when no member matched', () => {
    expect(explain({ stop: 5 })).toEqual([{ path: ['stop'], message: 'Invalid input: expected string or array' }])
  })

  it('names the rule a record key broke', () => {
    expect(explain({ metadata: { 'a[b]': 'c' } })).toEqual([
      { path: ['metadata', 'a[b]'], message: 'invalid key: metadata keys may not contain brackets' },
    ])
  })

  it('follows a union inside a union member, keeping the inner path', () => {
    const schema = z.union([
      z.string(),
      z.object({ tags: z.union([z.string(), z.array(z.string().max(2, 'tags are short'))]) }),
    ])
    expect(issuesOf(schema, { tags: ['abc'] }).map(explainIssue)).toEqual([
      { path: ['tags', 0], message: 'tags are short' },
    ])
  })

  it('names each matching member’s first broken rule rather than guess which was meant', () => {
    const schema = z.union([z.object({ a: z.string() }), z.object({ b: z.number() })])
    expect(issuesOf(schema, { a: 1, b: 'x' }).map(explainIssue)).toEqual([
      {
        path: [],
        message:
          'matches none of its forms (a: Invalid input: expected string, received number; or b: Invalid input: expected number, received string)',
      },
    ])
    const [item] = explain({ input: [{ role: 'robot', content: 'x' }] })
    expect(item!.path).toEqual(['input', 0])
    expect(item!.message).toMatch(
      /^matches none of its forms \(role: Invalid option: expected one of "user"\|.*; or type: /,
    )
  })

  it('keeps zod’s own message when no member says more', () => {
    const schema = z.union([z.string().refine(() => false), z.number().refine(() => false)])
    expect(issuesOf(schema, 'x').map(explainIssue)).toEqual([{ path: [], message: 'Invalid input' }])
    // A discriminator that names no member: zod lists no member's issues, and its message says it all.
    const tagged = z.discriminatedUnion('type', [
      z.object({ type: z.literal('a') }),
      z.object({ type: z.literal('b') }),
    ])
    const [issue] = issuesOf(tagged, { type: 'c' })
    expect(issue!.errors).toEqual([])
    expect(explainIssue(issue!)).toEqual({ path: ['type'], message: "Invalid discriminator value. Expected 'a' | 'b'" })
  })
})

describe('the table of gateway errors', () => {
  it('gives each canonical type its status and its name on every wire', async () => {
    const { GatewayErrors, openResponsesErrorType, anthropicErrorType } = await import('@roster/protocol')
    const { gatewayError } = await import('./errors.js')
    for (const [type, row] of Object.entries(GatewayErrors)) {
      expect(gatewayError(row.type, 'x').status).toBe(row.status)
      expect(['invalid_request', 'not_found', 'too_many_requests', 'server_error']).toContain(
        openResponsesErrorType(type),
      )
      expect(anthropicErrorType(type, row.status)).toMatch(/_error$|^request_too_large$/)
    }
    // A type the table does not know is named by its status.
    expect(anthropicErrorType('something_else', 429)).toBe('rate_limit_error')
    expect(gatewayError('authentication', 'provider refused our key', { status: 502 }).status).toBe(502)
  })
})
