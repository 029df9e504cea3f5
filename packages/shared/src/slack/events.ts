import { z } from 'zod'
import type { Db } from '../db.js'
import { storableText } from '@roster/protocol'
import { recordSlackEvent, slackThreadSession, type SlackFile } from '../repositories/slack-events.js'
import { revokeSlackLink } from '../repositories/slack-links.js'

// What Slack sends to an intern's event URL (Events API), once its signature is checked: the URL
// check (url_verification), and event callbacks. A mention or a direct message from a person is a
// turn (recorded once by event_id, its job queued in the same transaction); the app's uninstall or
// token revocation revokes the link; everything else (bots' messages, edits, joins) is ignored.

/** Slack's ids and timestamps: letters, digits, dots, dashes (nothing a database or a log could choke on). */
export const SlackId = z.string().regex(/^[\w.-]{1,200}$/)

const Envelope = z.discriminatedUnion('type', [
  z.object({ type: z.literal('url_verification'), challenge: z.string().max(200) }),
  z.looseObject({
    type: z.literal('event_callback'),
    team_id: SlackId,
    event_id: SlackId,
    event: z.looseObject({ type: z.string() }),
  }),
])

/** A file shared with a message, as Slack describes it (the parts Roster fetches it by). */
const SharedFile = z.looseObject({
  id: SlackId,
  name: z.string().max(1024).optional(),
  size: z.number().int().nonnegative().optional(),
  url_private_download: z.url().optional(),
  url_private: z.url().optional(),
})

/** Files a message may bring (Slack allows ten per message; more are left out). */
const MAX_FILES = 10

const PersonMessage = z.looseObject({
  type: z.enum(['app_mention', 'message']),
  user: SlackId,
  text: z.string().max(40_000),
  ts: SlackId,
  channel: SlackId,
  thread_ts: SlackId.optional(),
  channel_type: z.string().optional(),
  subtype: z.string().optional(),
  bot_id: z.string().optional(),
  files: z.array(SharedFile).optional(),
})

export type SlackEventOutcome =
  | { kind: 'challenge'; challenge: string }
  | { kind: 'turn'; eventId: string; duplicate: boolean }
  | { kind: 'revoked' }
  | { kind: 'ignored'; why: string }
  | { kind: 'malformed' }

/** The link the event is for, as the route read it. */
export interface EventLink {
  internId: string
  teamId: string | null
  botUserId: string | null
  /** Installed and not revoked: only then does a message become a turn. */
  live: boolean
}

export async function receiveSlackEvent(db: Db, link: EventLink, body: unknown): Promise<SlackEventOutcome> {
  const envelope = Envelope.safeParse(body)
  if (!envelope.success) return { kind: 'malformed' }
  if (envelope.data.type === 'url_verification') return { kind: 'challenge', challenge: envelope.data.challenge }
  const { team_id: team, event_id: eventId, event } = envelope.data
  if (link.teamId && team !== link.teamId) return { kind: 'ignored', why: 'another Slack workspace' }
  if (event.type === 'app_uninstalled' || event.type === 'tokens_revoked') {
    await revokeSlackLink(
      db,
      link.internId,
      `Slack said ${event.type}: install the app again to talk to the intern in Slack`,
    )
    return { kind: 'revoked' }
  }
  if (!link.live) return { kind: 'ignored', why: 'the link is not installed' }
  const m = PersonMessage.safeParse(event)
  if (!m.success) return { kind: 'ignored', why: `event ${event.type}` }
  const msg = m.data
  // Bots (itself included) and edits, joins and other subtypes are not a person's prompt (a message
  // sharing a file is, and so is a thread reply also sent to the channel).
  if (msg.bot_id || (msg.subtype && !PERSON_SUBTYPES.has(msg.subtype)) || msg.user === link.botUserId)
    return { kind: 'ignored', why: 'not a person' }
  // What a person typed is kept as text a database can hold (a NUL, a lone surrogate replaced).
  const said = storableText(msg.text)
  const where = await conversationOf(db, link, team, msg, said)
  if ('ignored' in where) return { kind: 'ignored', why: where.ignored }
  const text = link.botUserId ? said.replaceAll(`<@${link.botUserId}>`, '').trim() : said.trim()
  const files: SlackFile[] = (msg.files ?? []).slice(0, MAX_FILES).map((f) => ({
    id: f.id,
    name: storableText(f.name ?? f.id),
    size: f.size ?? null,
    url: f.url_private_download ?? f.url_private ?? null,
  }))
  // A bare mention is answered (the worker asks what they need); anything else that says nothing is not.
  if (!text && files.length === 0 && msg.type !== 'app_mention') return { kind: 'ignored', why: 'nothing said' }
  const recorded = await recordSlackEvent(db, {
    internId: link.internId,
    eventId,
    teamId: team,
    channel: msg.channel,
    ...where,
    userId: msg.user,
    text: text.slice(0, 30_000),
    files,
  })
  return { kind: 'turn', eventId, duplicate: !recorded }
}

/**
 * The session a conversation is: a channel's thread, or a whole direct-message conversation (no
 * `threadTs`). It keeps its history on any host, after a failover too.
 */
export const slackSessionId = (team: string, channel: string, threadTs?: string) =>
  threadTs ? `slack:${team}:${channel}:${threadTs}` : `slack:${team}:${channel}`

/** Subtypes of a person's own message: a file shared with it, a thread reply also sent to the channel. */
const PERSON_SUBTYPES = new Set(['file_share', 'thread_broadcast'])

type PersonMessage = z.infer<typeof PersonMessage>

/**
 * Where a person's message belongs, as a Slack user expects: a mention starts (or joins) a thread of
 * the channel; once the intern is in a thread, every reply in it is for the intern, mention or not
 * (a reply that mentions it comes as its own app_mention too, so only that one is taken); a direct
 * message conversation is one conversation, its replies in the DM itself (or in the thread a person
 * wrote in). Anything else in a channel is not for the intern.
 */
async function conversationOf(
  db: Db,
  link: EventLink,
  team: string,
  msg: PersonMessage,
  said: string,
): Promise<{ threadTs: string; sessionId: string } | { ignored: string }> {
  // A thread keeps the session it began with (a thread the intern's report started: that turn's).
  // Looked up once, and only for a message taken: channel chatter is ignored without a query.
  const known = async () =>
    msg.thread_ts ? slackThreadSession(db, link.internId, msg.channel, msg.thread_ts) : undefined
  if (msg.type === 'app_mention') {
    const threadTs = msg.thread_ts ?? msg.ts
    return { threadTs, sessionId: (await known()) ?? slackSessionId(team, msg.channel, threadTs) }
  }
  if (msg.channel_type === 'im')
    return { threadTs: msg.thread_ts ?? '', sessionId: (await known()) ?? slackSessionId(team, msg.channel) }
  if (msg.channel_type !== 'channel' && msg.channel_type !== 'group') return { ignored: 'not a conversation of its' }
  if (!msg.thread_ts) return { ignored: 'channel chatter, not in a thread' }
  // Without its own user id a mention cannot be told apart: only the mention events are taken then.
  if (!link.botUserId || said.includes(`<@${link.botUserId}>`)) return { ignored: 'its mention comes as app_mention' }
  const session = await known()
  if (session === undefined) return { ignored: 'a thread the intern is not in' }
  return { threadTs: msg.thread_ts, sessionId: session ?? slackSessionId(team, msg.channel, msg.thread_ts) }
}
