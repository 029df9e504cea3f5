import { z } from 'zod'

// What a run asks its user, and what counts as an answer (the contract's §1.3). A permission asks
// before an approval-bearing operation (a shell command, network for one, an HTTP request) in
// manual mode; an elicitation is a question the intern itself puts to the user (its ask_user tool),
// in either mode. Answers arrive as the `content` of a `tool` message; one that does not fit the
// question is refused and the run stays paused for a corrected one.

export const PERMISSION_OPTIONS = ['allow_once', 'allow_always', 'reject_once', 'reject_always'] as const
export type PermissionOption = (typeof PERMISSION_OPTIONS)[number]

export const ElicitationField = z.strictObject({
  name: z.string().min(1).max(64),
  type: z.enum(['string', 'number', 'integer', 'boolean']),
  required: z.boolean().default(true),
  options: z.array(z.string().max(200)).min(1).max(50).optional(),
})
export type ElicitationField = z.infer<typeof ElicitationField>

/** The ask_user tool's arguments, as the model sends them. */
export const ElicitationRequest = z.strictObject({
  message: z.string().min(1).max(4_000),
  fields: z.array(ElicitationField).max(20).default([]),
})

export type Question =
  | { kind: 'permission'; operation: string | null; options: PermissionOption[] }
  | { kind: 'elicitation'; message: string; fields: ElicitationField[] }

export type Answer =
  | { kind: 'permission'; choice: PermissionOption | 'cancel' }
  | { kind: 'elicitation'; action: 'accept'; content: Record<string, string | number | boolean> }
  | { kind: 'elicitation'; action: 'decline' | 'cancel' }

const ElicitationAnswer = z.discriminatedUnion('action', [
  z.strictObject({
    action: z.literal('accept'),
    content: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({}),
  }),
  z.strictObject({ action: z.literal('decline') }),
  z.strictObject({ action: z.literal('cancel') }),
])

/** The answer `content` gives to `question`, or why it is not one (the run then stays paused). */
export function readAnswer(question: Question, content: string): { answer: Answer } | { problem: string } {
  if (question.kind === 'permission') {
    const choice = content.trim()
    if (choice === 'cancel' || (question.options as string[]).includes(choice))
      return { answer: { kind: 'permission', choice: choice as PermissionOption | 'cancel' } }
    return { problem: `the answer to a permission request is one of ${[...question.options, 'cancel'].join(', ')}` }
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(content)
  } catch {
    return {
      problem:
        'the answer to a question is a JSON string: {"action":"accept","content":{…}}, {"action":"decline"} or {"action":"cancel"}',
    }
  }
  const answer = ElicitationAnswer.safeParse(parsed)
  if (!answer.success)
    return {
      problem:
        'the answer to a question is {"action":"accept","content":{…}}, {"action":"decline"} or {"action":"cancel"}',
    }
  if (answer.data.action !== 'accept') return { answer: { kind: 'elicitation', action: answer.data.action } }
  const given = answer.data.content
  for (const name of Object.keys(given))
    if (!question.fields.some((f) => f.name === name)) return { problem: `the question has no field ${name}` }
  for (const field of question.fields) {
    const value = given[field.name]
    if (value === undefined) {
      if (field.required) return { problem: `field ${field.name} is required` }
      continue
    }
    const fits =
      field.type === 'string'
        ? typeof value === 'string'
        : field.type === 'boolean'
          ? typeof value === 'boolean'
          : typeof value === 'number' && (field.type === 'number' || Number.isInteger(value))
    if (!fits) return { problem: `field ${field.name} is ${/^[aeiou]/.test(field.type) ? 'an' : 'a'} ${field.type}` }
    if (field.options && !field.options.includes(String(value)))
      return { problem: `field ${field.name} is one of ${field.options.join(', ')}` }
  }
  return { answer: { kind: 'elicitation', action: 'accept', content: given } }
}

/** The tool call's arguments as the client sees them: the question, as a JSON string. */
export const questionArguments = (question: Question) => JSON.stringify(question)
