import { inGroup, type JobPayload } from '@roster/shared'
import { RuntimeUnavailableError } from '@roster/shared/fleet'
import { slackSessionId } from '@roster/shared/slack'
import { earlierReplyPending, slackEventOf, updateSlackEvent, type SlackFile } from '@roster/shared/repositories'
import type { JobContext, WorkerDeps } from '../context.js'
import { isRevocation, posterFor, revokedBy, type SlackPoster } from '../slack/poster.js'
import { HOST_ANSWER_TIMEOUT_MS, relayRun } from '../slack/relay.js'
import { fetchSharedFiles } from '../slack/shared-files.js'

// A Slack message's turn: a reply in its thread. The turn runs whether or not Slack answers: a
// placeholder is posted first when Slack takes it (its ts recorded), the intern's text streams into
// it about once a second, and when the turn is over its whole reply is kept (state `answered`) and
// posted: as an update of the placeholder, or as a new message. A reply is posted only after every
// earlier message of its thread has had its own (Slack away, the job waits and tries again, with
// the kind's long backoff), so a thread reads in order. A post whose answer was lost (the worker
// died waiting) is found in the thread by its metadata, not posted twice. A job that finds its
// turn already running was cut off midway: the turn is not run twice (what the intern did stands);
// the thread is told to ask again.

type Event = Omit<NonNullable<Awaited<ReturnType<typeof slackEventOf>>>, 'files'> & { files: SlackFile[] }

/** A reply waits for an earlier one of its thread: the job is tried again later. */
class EarlierReplyPending extends Error {
  constructor() {
    super('an earlier reply in this thread is not posted yet')
  }
}

/** The intern stayed busy with other threads: the turn has not run, and its job is tried again later. */
class InternBusy extends Error {
  constructor() {
    super('the intern is busy with other conversations')
  }
}

/**
 * How long a turn waits for the intern to finish other threads' turns (it runs one at a time) before
 * its job gives its place back and is tried again later.
 */
const BUSY_WAIT_MS = 60_000

export async function handle(deps: WorkerDeps, payload: JobPayload<'slack.turn'>, ctx: JobContext) {
  const { internId, eventId } = payload
  const row = await slackEventOf(deps.db, internId, eventId)
  if (!row || row.state === 'done') return 'done'
  const event: Event = { ...row, files: row.files as unknown as SlackFile[] }
  const slack = posterFor(deps.config, event.link, event.channel, event.threadTs)
  if (!slack) return finish(deps, event, 'revoked')
  try {
    if (event.state === 'answered') return await deliver(deps, event, slack, event.replyText ?? '')
    if (event.state === 'running')
      return await answer(
        deps,
        event,
        slack,
        'My answer was cut off (Roster restarted while I worked). Ask me again to continue.',
        'interrupted',
      )
    const { status, provisionGeneration } = event.link.intern
    if (status !== 'running')
      return await answer(deps, event, slack, notRunning(status, provisionGeneration), `not running: ${status}`)
    // A bare mention: asked what they need, nothing run (their reply in the thread reaches the intern).
    if (!event.text && event.files.length === 0)
      return await answer(
        deps,
        event,
        slack,
        `Yes, <@${event.userId}>? Tell me what you need ${where(event)}.`,
        'asked',
      )
    const replyTs = await placeholder(deps, event, slack)
    await updateSlackEvent(deps.db, internId, eventId, { state: 'running' })
    const ran = await runTurn(deps, event, slack, replyTs)
    if (ran === 'busy') {
      // Not run: the next attempt starts it afresh (not as a turn cut off).
      await updateSlackEvent(deps.db, internId, eventId, { state: 'received' })
      throw new InternBusy()
    }
    return await answer(deps, event, slack, ran.text, ran.outcome)
  } catch (err) {
    if (await revokedBy(deps.db, internId, err)) return finish(deps, event, 'revoked')
    if (ctx.finalAttempt) await finish(deps, event, `failed: ${(err as Error).message}`)
    throw err
  }
}

/** What an intern that is not running says, by why. */
function notRunning(status: string, provisionGeneration: number): string {
  if (status === 'stopped' && provisionGeneration === 0)
    return 'I have not been provisioned yet: ask whoever set me up to provision me, then talk to me here.'
  if (status === 'stopped') return 'I am suspended: provision me to talk here again.'
  if (inGroup('provisioningRun', status)) return 'I am still being set up; try again in a minute.'
  return `I am not running (status ${status}).`
}

/** Where a person goes on talking to the intern without mentioning it again. */
const where = (event: Event) => (event.threadTs ? 'in this thread (no need to mention me again here)' : 'here')

/**
 * The reply's message before the turn runs, when Slack takes it now and no earlier reply of the
 * thread waits (it would then come first); undefined otherwise: the reply is posted at the end.
 */
async function placeholder(deps: WorkerDeps, event: Event, slack: SlackPoster): Promise<string | undefined> {
  if (await earlierReplyPending(deps.db, event)) return undefined
  try {
    return await placeReply(deps, event, slack, '…')
  } catch (err) {
    if (isRevocation(err)) throw err
    return undefined // Slack away: the turn runs regardless.
  }
}

/** The turn is over: its reply kept (so it survives Slack being away, and this worker), then posted. */
async function answer(deps: WorkerDeps, event: Event, slack: SlackPoster, text: string, outcome: string) {
  await updateSlackEvent(deps.db, event.internId, event.eventId, { state: 'answered', replyText: text, outcome })
  return deliver(deps, { ...event, outcome }, slack, text)
}

/**
 * Posts a kept reply, after every earlier one of its thread (but the note that a message steered the
 * running turn: it is about that turn, and says so at once).
 */
async function deliver(deps: WorkerDeps, event: Event, slack: SlackPoster, text: string) {
  if (event.outcome !== 'steered' && (await earlierReplyPending(deps.db, event))) throw new EarlierReplyPending()
  await placeReply(deps, event, slack, text)
  return finish(deps, event, event.outcome ?? 'answered', true)
}

/**
 * Makes the event's reply read `text`: an update of its message when it has one (recorded, or found
 * in the thread by its metadata after a post whose answer was lost), else a new post (its start
 * recorded first, its ts after).
 */
async function placeReply(deps: WorkerDeps, event: Event, slack: SlackPoster, text: string): Promise<string> {
  let ts =
    event.replyTs ?? (event.postBegunAt ? await slack.findReply(event.eventId, event.postBegunAt.getTime()) : undefined)
  if (ts) {
    await slack.update(ts, text)
  } else {
    await updateSlackEvent(deps.db, event.internId, event.eventId, { postBegunAt: new Date() })
    event.postBegunAt = new Date()
    ts = await slack.post(text, event.eventId)
  }
  if (ts !== event.replyTs) {
    await updateSlackEvent(deps.db, event.internId, event.eventId, { replyTs: ts })
    event.replyTs = ts
  }
  return ts
}

async function finish(deps: WorkerDeps, event: Event, outcome: string, posted = false) {
  await updateSlackEvent(deps.db, event.internId, event.eventId, {
    state: 'done',
    outcome: outcome.slice(0, 500),
    // Posted: the kept text is Slack's now.
    ...(posted ? { replyText: null } : {}),
  })
  return outcome
}

/**
 * Runs the turn on the intern's host, streaming its text into the reply while Slack takes it; its
 * whole reply. An intern busy with another thread's turn is waited for (people in many threads talk
 * to one intern); `busy` when it stayed so.
 */
async function runTurn(
  deps: WorkerDeps,
  event: Event,
  slack: SlackPoster,
  replyTs: string | undefined,
): Promise<{ text: string; outcome: string } | 'busy'> {
  const placed = await deps.runtime.placement(event.internId)
  if (!placed || placed.status !== 'running')
    return { text: 'I am not running right now; try again shortly.', outcome: 'not placed' }
  const abort = new AbortController()
  const sessionId = event.sessionId ?? slackSessionId(event.teamId, event.channel, event.threadTs)
  const shared = event.files.length ? await fetchSharedFiles(deps, placed, event, slack) : []
  // The prompt names who asked (many people talk to one intern in a channel: their display name, and
  // the id that mentions them) and the files they shared.
  const name = await slack.nameOf(event.userId)
  const message = [
    `${name ? `${name} (<@${event.userId}>)` : `<@${event.userId}>`} says:\n${event.text}`,
    ...(shared.length ? [`They shared files, now in your workspace:\n${shared.join('\n')}`] : []),
  ].join('\n\n')
  const until = Date.now() + BUSY_WAIT_MS
  let outcome
  for (;;) {
    try {
      outcome = await deps.runtime.chat(
        placed,
        event.internId,
        {
          session_id: sessionId,
          message,
          // What it would do on someone's behalf is asked in the thread, as a card (docs/slack.md).
          approval_mode: 'manual',
        },
        abort.signal,
        HOST_ANSWER_TIMEOUT_MS,
      )
    } catch (err) {
      if (err instanceof RuntimeUnavailableError)
        return { text: 'I could not be reached; try again shortly.', outcome: 'unreachable' }
      throw err
    }
    if (outcome.kind !== 'refused' || outcome.error.error !== 'busy') break
    if (Date.now() > until) return 'busy'
    // Jittered, so the threads waiting on one intern do not all ask at once.
    await new Promise((r) => setTimeout(r, 100 + Math.random() * 400))
  }
  if (outcome.kind === 'steered') return { text: '_(added to the answer I am working on)_', outcome: 'steered' }
  if (outcome.kind === 'refused') return { text: outcome.error.message, outcome: `refused: ${outcome.error.error}` }
  return relayRun(deps, { internId: event.internId, eventId: event.eventId, sessionId }, slack, replyTs, outcome.events)
}
