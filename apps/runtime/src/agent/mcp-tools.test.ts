import { describe, expect, it } from 'vitest'
import { modelToolName, schemaProblem } from './mcp-tools.js'

describe("an MCP server's tools as a model is offered them", () => {
  it('names each in the characters providers take, at most 64 of them', () => {
    expect(modelToolName('github', 'create_issue')).toBe('mcp__github__create_issue')
    expect(modelToolName('gh', 'issues.list/all ✓')).toBe('mcp__gh__issues_list_all__')
    const long = modelToolName('server', 'x'.repeat(200))
    expect(long).toHaveLength(64)
    expect(long).toMatch(/^[A-Za-z0-9_-]+$/)
  })

  it('takes only object schemas of a bounded size', () => {
    expect(schemaProblem({ type: 'object', properties: { a: { type: 'number' } } })).toBeUndefined()
    expect(schemaProblem({ type: 'object' })).toBeUndefined()
    expect(schemaProblem(undefined)).toMatch(/not an object/)
    expect(schemaProblem([])).toMatch(/not an object/)
    expect(schemaProblem({ type: 'string' })).toMatch(/not of type object/)
    expect(schemaProblem({ type: 'object', properties: [] })).toMatch(/properties/)
    expect(schemaProblem({ type: 'object', description: 'x'.repeat(40_000) })).toMatch(/over/)
  })
})
