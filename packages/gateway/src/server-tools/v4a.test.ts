import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createdText, updatedText } from './v4a.js'

describe('V4A diffs applied', () => {
  it('makes a new file of the added lines', () => {
    expect(createdText('+a\n+b\n')).toBe('a\nb\n')
    expect(createdText('@@\n+only\n')).toBe('only\n')
  })

  it('applies hunks in order, each where it matches once, after its anchor', () => {
    const text = 'function a() {\n  return 1\n}\n\nfunction b() {\n  return 1\n}\n'
    const diff = '@@ function b() {\n-  return 1\n+  return 2\n'
    expect(updatedText(text, diff)).toEqual({ text: text.replace(/return 1\n}\n$/, 'return 2\n}\n') })
    expect(updatedText('x\ny\n', '@@\n x\n+inserted\n y\n')).toEqual({ text: 'x\ninserted\ny\n' })
    expect(updatedText('x\n', '@@\n+appended\n')).toEqual({ text: 'x\nappended\n' })
  })

  it('refuses a hunk that matches nowhere, or more than once, or an anchor that is not there', () => {
    expect(updatedText('a\n', '@@\n-b\n+c\n')).toEqual({ problem: 'hunk 1: its lines are not in the file (as given)' })
    expect(updatedText('a\na\n', '@@\n-a\n+c\n')).toEqual({
      problem: 'hunk 1: its lines occur more than once; give more context',
    })
    expect(updatedText('a\n', '@@ nowhere\n-a\n+c\n')).toMatchObject({
      problem: expect.stringMatching(/^hunk 1: no line/),
    })
  })

  it('gives back the file unchanged for a diff that replaces each line with itself', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.string().map((s) => s.replace(/[\r\n]/g, '')),
          { minLength: 1, maxLength: 20 },
        ),
        (lines) => {
          const unique = lines.map((l, i) => `${i}:${l}`)
          const text = unique.join('\n') + '\n'
          const diff = '@@\n' + unique.map((l) => `-${l}\n+${l}\n`).join('')
          expect(updatedText(text, diff)).toEqual({ text })
        },
      ),
    )
  })
})
