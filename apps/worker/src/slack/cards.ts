// A turn's question in Slack as a Block Kit card: what is asked, and a button per answer. A
// permission request offers its options; an elicitation (a form) is answered through a modal its
// "Answer…" button opens (the API opens it: apps/api/src/slack/answer-form.ts), or declined or
// cancelled here. Once answered or expired, the card says so and loses its buttons.

import type { Button, KnownBlock } from '@slack/types'
import { SLACK_OPEN_FORM } from '@roster/shared'

const LABELS: Record<string, string> = {
  allow_once: 'Allow once',
  allow_always: 'Allow always',
  reject_once: 'Reject',
  reject_always: 'Reject always',
}

export interface Question {
  kind?: string
  operation?: string | null
  message?: string
  options?: string[]
}

/** What the question asks, as the card's text. */
export function questionText(q: Question): string {
  if (q.kind === 'permission') return `*I need your permission* ${q.operation ? `for \`${q.operation}\`` : 'to go on'}.`
  return `*I have a question:* ${q.message ?? ''}`.trim()
}

/** The answers a card offers: its options, or declining / cancelling a form. */
export function answersOf(q: Question): { label: string; answer: string }[] {
  if (q.kind === 'permission' && q.options?.length) return q.options.map((o) => ({ label: LABELS[o] ?? o, answer: o }))
  return [
    // The API opens the form for this one (views.open needs the click's trigger, good for 3 s).
    { label: 'Answer…', answer: SLACK_OPEN_FORM },
    { label: 'Decline', answer: JSON.stringify({ action: 'decline' }) },
    { label: 'Cancel', answer: JSON.stringify({ action: 'cancel' }) },
  ]
}

export function questionCard(interactionId: string, q: Question): KnownBlock[] {
  return [
    { type: 'section', text: { type: 'mrkdwn', text: questionText(q) } },
    {
      type: 'actions',
      block_id: 'roster_question',
      elements: answersOf(q).map((a, i): Button => ({
        type: 'button',
        action_id: `answer_${i}`,
        text: { type: 'plain_text', text: a.label },
        value: JSON.stringify({ i: interactionId, a: a.answer }),
        ...(a.answer.startsWith('allow') || a.answer === SLACK_OPEN_FORM
          ? { style: 'primary' }
          : a.answer.startsWith('reject')
            ? { style: 'danger' }
            : {}),
      })),
    },
  ]
}

/** The card once decided: who answered what, and when (Slack shows the date in the reader's time zone). */
export function decidedCard(q: Question, answer: string, by: string, at: Date): KnownBlock[] {
  const label = answersOf(q).find((a) => a.answer === answer)?.label ?? formAnswerLabel(answer)
  const when = `<!date^${Math.floor(at.getTime() / 1000)}^{date_short_pretty} at {time}|${at.toISOString()}>`
  return [
    { type: 'section', text: { type: 'mrkdwn', text: questionText(q) } },
    { type: 'context', elements: [{ type: 'mrkdwn', text: `*${label}* by <@${by}>, ${when}` }] },
  ]
}

/** A form's answer as the card shows it: its values. */
function formAnswerLabel(answer: string): string {
  try {
    const { content } = JSON.parse(answer) as { content?: Record<string, unknown> }
    const given = Object.entries(content ?? {}).map(([k, v]) => `${k}: ${String(v)}`)
    return `Answered${given.length ? ` (${given.join(', ')})` : ''}`.slice(0, 2000)
  } catch {
    return answer.slice(0, 200)
  }
}

/** A question's arguments as the run sent them; an empty question when they are not an object. */
export function parsedQuestion(args: string): Question {
  try {
    const q = JSON.parse(args) as unknown
    return q && typeof q === 'object' ? (q as Question) : {}
  } catch {
    return {}
  }
}

/**
 * A card whose turn went on or ended without an answer here: answered elsewhere (the turn then went
 * on: chat, the console's inbox), or expired with it.
 */
export function closedCard(q: Question, turnState: string): KnownBlock[] {
  if (turnState !== 'done') return expiredCard(q)
  return [
    { type: 'section', text: { type: 'mrkdwn', text: questionText(q) } },
    { type: 'context', elements: [{ type: 'mrkdwn', text: 'Answered in Roster, not here; the turn went on.' }] },
  ]
}

export function expiredCard(q: Question): KnownBlock[] {
  return [
    { type: 'section', text: { type: 'mrkdwn', text: questionText(q) } },
    { type: 'context', elements: [{ type: 'mrkdwn', text: 'Expired: nobody answered in time, and the turn ended.' }] },
  ]
}
