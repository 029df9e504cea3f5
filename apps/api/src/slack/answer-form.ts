import type { KnownBlock, ModalView } from '@slack/types'

// A question the intern asks (its ask_user tool: a message and typed fields) answered in Slack
// through a modal: the card's "Answer…" button opens it (views.open, within Slack's 3 seconds of the
// click), an input per field (a choice for one with options or a yes/no, a number input for a
// number), and its submission becomes the run's answer: {"action":"accept","content":{…}}. A value
// that does not fit its field is shown beside it, as Slack's modals show errors, and nothing is sent.

export const ANSWER_FORM_CALLBACK = 'roster_answer'

export interface FormField {
  name: string
  type: 'string' | 'number' | 'integer' | 'boolean'
  required?: boolean
  options?: string[]
}
export interface FormQuestion {
  message?: string
  fields?: FormField[]
}

const blockId = (i: number) => `field_${i}`
const plain = (text: string, max: number) => ({ type: 'plain_text' as const, text: text.slice(0, max) || ' ' })

export function answerFormView(interactionId: string, q: FormQuestion): ModalView {
  const fields = q.fields ?? []
  const blocks: KnownBlock[] = [
    { type: 'section', text: { type: 'mrkdwn', text: (q.message ?? 'I have a question.').slice(0, 3000) } },
    ...fields.map((f, i): KnownBlock => {
      const choices = f.options ?? (f.type === 'boolean' ? ['yes', 'no'] : undefined)
      const element = choices
        ? {
            type: 'static_select' as const,
            action_id: 'value',
            options: choices.slice(0, 100).map((o) => ({ text: plain(o, 75), value: o.slice(0, 150) })),
          }
        : f.type === 'string'
          ? { type: 'plain_text_input' as const, action_id: 'value', multiline: true, max_length: 3000 }
          : { type: 'number_input' as const, action_id: 'value', is_decimal_allowed: f.type === 'number' }
      return {
        type: 'input',
        block_id: blockId(i),
        label: plain(f.name, 2000),
        optional: f.required === false,
        element,
      }
    }),
  ]
  return {
    type: 'modal',
    callback_id: ANSWER_FORM_CALLBACK,
    private_metadata: JSON.stringify({ i: interactionId }),
    title: plain('Answer', 24),
    submit: plain('Send', 24),
    close: plain('Cancel', 24),
    blocks,
  }
}

type StateValues = Record<
  string,
  Record<string, { value?: string | null; selected_option?: { value?: string } | null }>
>

/** The run's answer from a submitted form, or the errors to show beside its fields. */
export function answerFromForm(
  q: FormQuestion,
  values: StateValues,
): { answer: string } | { errors: Record<string, string> } {
  const content: Record<string, string | number | boolean> = {}
  const errors: Record<string, string> = {}
  ;(q.fields ?? []).forEach((f, i) => {
    const state = values[blockId(i)]?.value
    const raw = state?.selected_option?.value ?? state?.value ?? undefined
    if (raw === undefined || raw === null || raw === '') {
      if (f.required !== false) errors[blockId(i)] = 'This is required.'
      return
    }
    if (f.type === 'string') content[f.name] = raw
    else if (f.type === 'boolean') content[f.name] = raw === 'yes' || raw === 'true'
    else {
      const n = Number(raw)
      if (!Number.isFinite(n) || (f.type === 'integer' && !Number.isInteger(n)))
        errors[blockId(i)] = f.type === 'integer' ? 'A whole number, please.' : 'A number, please.'
      else content[f.name] = n
    }
  })
  if (Object.keys(errors).length) return { errors }
  return { answer: JSON.stringify({ action: 'accept', content }) }
}
