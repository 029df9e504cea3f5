import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ResponsesRequest } from '@roster/gateway'
import { explainIssue, type ZodIssueLike } from './errors.js'

const issuesOf = (schema: z.ZodType, value: unknown) => {
  const parsed = schema.safeParse(value)
  if (parsed.success) throw new Error('expected the value to be refused')
  return parsed.error.issues as unknown as ZodIssueLike[]
}
const explain = (value: object) => issuesOf(ResponsesRequest, { model: 'a/b', input: 'x', ...value }).map(explainIssue)

describe('explainIssue', () => {
  it('names the broken rule of the one union member whose type matched', () => {
    expect(explain({ stop: ['a', 'b', 'c', 'd', 'e'] })).toEqual([{ path: ['stop'], message: 'at most 4 stop sequences' }])
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
    const schema = z.union([z.string(), z.object({ tags: z.union([z.string(), z.array(z.string().max(2, 'tags are short'))]) })])
    expect(issuesOf(schema, { tags: ['abc'] }).map(explainIssue)).toEqual([{ path: ['tags', 0], message: 'tags are short' }])
  })

  it('names each matching member’s first broken rule rather than guess which was meant', () => {
    const schema = z.union([z.object({ a: z.string() }), z.object({ b: z.number() })])
    expect(issuesOf(schema, { a: 1, b: 'x' }).map(explainIssue)).toEqual([
      { path: [], message: 'matches none of its forms (a: Invalid input: expected string, received number; or b: Invalid input: expected number, received string)' },
    ])
    const [item] = explain({ input: [{ role: 'robot', content: 'x' }] })
    expect(item!.path).toEqual(['input', 0])
    expect(item!.message).toMatch(/^matches none of its forms \(role: Invalid option: expected one of "user"\|.*; or type: /)
  })

  it('keeps the generic message when no member says more', () => {
    const schema = z.union([z.string().refine(() => false), z.number().refine(() => false)])
    expect(issuesOf(schema, 'x').map(explainIssue)).toEqual([{ path: [], message: 'Invalid input' }])
  })
})
