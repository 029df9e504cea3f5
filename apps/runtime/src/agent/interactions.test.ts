import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { readAnswer, type Question } from './interactions.js'

const permission: Question = {
  kind: 'permission',
  operation: 'shell command: ls',
  options: ['allow_once', 'reject_once'],
}
const question: Question = {
  kind: 'elicitation',
  message: 'Which branch, and how many?',
  fields: [
    { name: 'branch', type: 'string', required: true, options: ['main', 'dev'] },
    { name: 'count', type: 'integer', required: false },
    { name: 'force', type: 'boolean', required: false },
  ],
}

describe('answers to what a run asks', () => {
  it('takes an offered permission option or cancel, and nothing else', () => {
    expect(readAnswer(permission, 'allow_once')).toEqual({ answer: { kind: 'permission', choice: 'allow_once' } })
    expect(readAnswer(permission, ' cancel\n')).toEqual({ answer: { kind: 'permission', choice: 'cancel' } })
    // Not offered, though a valid option elsewhere.
    expect(readAnswer(permission, 'allow_always')).toEqual({
      problem: 'the answer to a permission request is one of allow_once, reject_once, cancel',
    })
    expect(readAnswer(permission, '{"action":"accept"}')).toHaveProperty('problem')
  })

  it('takes an elicitation answer that fits its fields: accept with values, decline or cancel', () => {
    expect(readAnswer(question, '{"action":"accept","content":{"branch":"dev","count":3}}')).toEqual({
      answer: { kind: 'elicitation', action: 'accept', content: { branch: 'dev', count: 3 } },
    })
    expect(readAnswer(question, '{"action":"decline"}')).toEqual({ answer: { kind: 'elicitation', action: 'decline' } })
    expect(readAnswer(question, '{"action":"cancel"}')).toEqual({ answer: { kind: 'elicitation', action: 'cancel' } })
    const problems = [
      ['allow_once', /JSON string/],
      ['{"action":"maybe"}', /accept/],
      ['{"action":"accept","content":{}}', /branch is required/],
      ['{"action":"accept","content":{"branch":"feature"}}', /branch is one of main, dev/],
      ['{"action":"accept","content":{"branch":"main","count":1.5}}', /count is an integer/],
      ['{"action":"accept","content":{"branch":"main","force":"yes"}}', /force is a boolean/],
      ['{"action":"accept","content":{"branch":"main","extra":1}}', /no field extra/],
      ['{"action":"decline","content":{}}', /accept/],
    ] as const
    for (const [content, why] of problems)
      expect((readAnswer(question, content) as { problem: string }).problem, content).toMatch(why)
  })

  it('never throws, whatever a client sends', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (content) => {
        for (const q of [permission, question]) {
          const read = readAnswer(q, content)
          expect('answer' in read || 'problem' in read).toBe(true)
        }
      }),
    )
  })
})
