import { describe, expect, it } from 'vitest'
import { answerFormView, answerFromForm, type FormQuestion } from './answer-form.js'

const q: FormQuestion = {
  message: 'Where and how much?',
  fields: [
    { name: 'region', type: 'string', options: ['eu', 'us'] },
    { name: 'count', type: 'integer' },
    { name: 'ratio', type: 'number', required: false },
    { name: 'urgent', type: 'boolean' },
    { name: 'note', type: 'string', required: false },
  ],
}
const text = (value: string | null) => ({ value })
const choice = (value: string) => ({ selected_option: { value } })

describe('a question answered through a Slack form', () => {
  it('has an input per field, of the kind the field takes, optional where the field is', () => {
    const view = answerFormView('call_1', q)
    expect(JSON.parse(view.private_metadata!)).toEqual({ i: 'call_1' })
    const inputs = view.blocks.filter((b) => b.type === 'input') as { element: { type: string }; optional: boolean }[]
    expect(inputs.map((b) => [b.element.type, b.optional])).toEqual([
      ['static_select', false],
      ['number_input', false],
      ['number_input', true],
      ['static_select', false],
      ['plain_text_input', true],
    ])
  })

  it('turns the values into the run’s answer, typed as the fields say', () => {
    const values = {
      field_0: { value: choice('us') },
      field_1: { value: text('12') },
      field_2: { value: text('0.5') },
      field_3: { value: choice('no') },
      field_4: { value: text(null) },
    }
    const given = answerFromForm(q, values)
    expect(given).toEqual({
      answer: JSON.stringify({ action: 'accept', content: { region: 'us', count: 12, ratio: 0.5, urgent: false } }),
    })
  })

  it('names each field that does not fit, and sends nothing', () => {
    expect(answerFromForm(q, { field_1: { value: text('1.5') }, field_2: { value: text('many') } })).toEqual({
      errors: {
        field_0: 'This is required.',
        field_1: 'A whole number, please.',
        field_2: 'A number, please.',
        field_3: 'This is required.',
      },
    })
  })

  it('accepts a question with no fields as it is', () => {
    expect(answerFromForm({ message: 'Go on?' }, {})).toEqual({ answer: '{"action":"accept","content":{}}' })
  })
})
