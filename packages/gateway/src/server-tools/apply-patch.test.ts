import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { operationOf, patchProblem } from './apply-patch.js'

describe("apply_patch's check of a V4A diff", () => {
  it('passes a new file whose lines are all added, whatever they hold, and an update that changes a line', () => {
    fc.assert(
      fc.property(fc.array(fc.string().map((s) => s.replace(/[\r\n]/g, ''))), (lines) => {
        const diff = lines.map((l) => `+${l}\n`).join('')
        expect(patchProblem({ type: 'create_file', path: 'f', diff })).toBeUndefined()
      }),
    )
    expect(
      patchProblem({ type: 'update_file', path: 'f', diff: '@@ class A\n a\n\n-b\n+c\r\n*** End of File\n' }),
    ).toBeUndefined()
    expect(patchProblem({ type: 'delete_file', path: 'f' })).toBeUndefined()
  })

  it('names the first line that does not read', () => {
    expect(patchProblem({ type: 'create_file', path: 'f', diff: '+a\n b\n' })).toMatch(/^line 2 /)
    expect(patchProblem({ type: 'update_file', path: 'f', diff: '@@\n+a\n#b\n' })).toMatch(/^line 3 /)
    expect(patchProblem({ type: 'update_file', path: 'f\0', diff: '+a' })).toMatch(/NUL/)
  })

  it('reads any arguments without throwing: an operation, or why there is none', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('type', 'path', 'diff', 'x'), fc.jsonValue()), (args) => {
        const op = operationOf(args)
        if (typeof op !== 'string') patchProblem(op)
      }),
    )
  })
})
