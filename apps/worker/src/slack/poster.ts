import type { KnownBlock } from '@slack/types'
import { ErrorCode, WebClient, type ChatPostMessageArguments } from '@slack/web-api'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Db } from '@roster/shared'
import { slackErrorCode, unsealSlackSecrets } from '@roster/shared/slack'
import { revokeSlackLink } from '@roster/shared/repositories'

// Posting a turn's reply into its Slack thread with Slack's own client (which waits out a 429's
// Retry-After and retries the calls safe to send again; a post is tried again only by `post`, which
// looks for it first): a post, then updates, the streaming ones at most about once a second
// (chat.update is a Tier 3 method: ~50 a minute per workspace), tried once each and given up while
// Slack is away (the whole reply is posted after). A reply carries its event's id in its message
// metadata, so a post whose answer was lost (the connection dropped, the worker died) is found in the
// conversation before it is posted again: a reply is never posted twice.

/** Slack cuts a message's text at 40,000 characters; a reply keeps under it. */
const MAX_TEXT = 39_000
const STREAM_EVERY_MS = 1_000

/** Slack's answers that mean the bot token is no longer any good: the link is revoked. */
const REVOKED = new Set(['invalid_auth', 'token_revoked', 'account_inactive', 'not_authed', 'token_expired'])

export const isRevocation = (err: unknown) => REVOKED.has(slackErrorCode(err) ?? '')

/** Revokes the link when Slack refused its bot token (nothing more is posted); whether it did. */
export async function revokedBy(db: Db, internId: string, err: unknown): Promise<boolean> {
  if (!isRevocation(err)) return false
  await revokeSlackLink(db, internId, `Slack refused the bot token (${(err as Error).message}); install again`)
  return true
}

/**
 * Slack's client for a bot token, at the configured API URL. `retrying`: a few quick tries within a
 * job (Slack's default keeps one going for half an hour; the job's own retries come after), for
 * what is safe to send again (updates, reads). `posting`: one try, a 429 thrown with its delay: a
 * post is tried again only by `SlackPoster.post`, which looks for it first. `once`: one short try (a
 * streamed update a later one replaces, a name for the prompt).
 */
const botClient = (token: string, apiUrl: string, kind: 'retrying' | 'posting' | 'once') =>
  new WebClient(token, {
    slackApiUrl: apiUrl,
    allowAbsoluteUrls: false,
    timeout: kind === 'once' ? 5_000 : 15_000,
    rejectRateLimitedCalls: kind === 'posting',
    retryConfig: kind === 'retrying' ? { retries: 4, factor: 2, minTimeout: 250, maxTimeout: 4_000 } : { retries: 0 },
  })

/** Tries of one post within a job, and the wait before the next (doubling, at most 4 s). */
const POST_TRIES = 5
const POST_BACKOFF_MS = 250

/** Whether Slack said why it did not take a call (it did not take it): no use looking for the post. */
const slackRefused = (err: unknown) => (err as { code?: string }).code === ErrorCode.PlatformError

/** Display names by bot token and user, kept a while (a thread's people rarely rename themselves). */
const names = new Map<string, { name: string | undefined; at: number }>()
const NAME_TTL_MS = 10 * 60_000
const MAX_NAMES = 5_000

/** The metadata a reply carries: which event it answers. */
const REPLY_EVENT_TYPE = 'roster_reply'

/**
 * The poster for a link's thread, with the link's bot token; undefined when the link is not
 * installed (revoked, uninstalled) or holds no token: nothing is posted then.
 */
export function posterFor(
  config: { VAULT_MASTER_KEY?: Buffer; SLACK_API_URL: string },
  link: { internId: string; state: string; sealed: Uint8Array },
  channel: string,
  threadTs: string,
): SlackPoster | undefined {
  if (link.state !== 'installed') return undefined
  if (!config.VAULT_MASTER_KEY) throw new Error('Slack needs VAULT_MASTER_KEY to open the bot token')
  const token = unsealSlackSecrets(config.VAULT_MASTER_KEY, link.internId, link.sealed).bot_token
  return token ? new SlackPoster(token, config.SLACK_API_URL, channel, threadTs) : undefined
}

/** A file a person shared, fetched with the bot token: its bytes, or why not. */
export type Download = { ok: true; bytes: Uint8Array } | { ok: false; why: string }

export class SlackPoster {
  private readonly client: WebClient
  private readonly poster: WebClient
  private readonly streamer: WebClient
  private lastUpdate = 0
  /** Set once a streamed update failed: Slack is away, and the rest of the reply waits for the end. */
  private streamingOff = false

  /** Where a message goes: the thread, or none for a direct message outside any thread (`threadTs` ''). */
  private readonly thread: { thread_ts?: string }

  constructor(
    private readonly token: string,
    private readonly apiUrl: string,
    private readonly channel: string,
    private readonly threadTs: string,
  ) {
    this.client = botClient(token, apiUrl, 'retrying')
    this.poster = botClient(token, apiUrl, 'posting')
    this.streamer = botClient(token, apiUrl, 'once')
    this.thread = threadTs ? { thread_ts: threadTs } : {}
  }

  /**
   * How a person is named in the prompt: their display name (users:read), or undefined when Slack
   * does not say (the prompt then names them by id alone).
   */
  async nameOf(user: string): Promise<string | undefined> {
    const key = `${this.token}:${user}`
    const known = names.get(key)
    if (known && Date.now() - known.at < NAME_TTL_MS) return known.name
    const r = await this.streamer.users.info({ user }).catch(() => undefined)
    if (!r) return known?.name
    const u = r.user
    // A name is one short line in the prompt, whatever a person made it.
    const name = [u?.profile?.display_name, u?.profile?.real_name, u?.real_name, u?.name]
      .map((n) => n?.replace(/\s+/g, ' ').trim())
      .find(Boolean)
      ?.slice(0, 80)
    if (names.size >= MAX_NAMES) names.delete(names.keys().next().value!)
    names.set(key, { name, at: Date.now() })
    return name
  }

  /**
   * A shared file's bytes, from its private URL with the bot token (files:read), at most `maxBytes`.
   * Only Slack's own hosts are sent the token: files.slack.com, or the configured API's host.
   */
  async download(url: string, maxBytes: number): Promise<Download> {
    let target: URL
    try {
      target = new URL(url)
    } catch {
      return { ok: false, why: 'Slack gave no usable link to it' }
    }
    const slackHosts = [new URL(this.apiUrl).origin, 'https://files.slack.com']
    if (!slackHosts.includes(target.origin)) return { ok: false, why: `its link is not Slack's (${target.origin})` }
    const res = await fetch(target, {
      headers: { authorization: `Bearer ${this.token}` },
      // A redirect elsewhere is not followed with the token.
      redirect: 'manual',
      signal: AbortSignal.timeout(60_000),
    })
    if (res.status !== 200) {
      await res.body?.cancel()
      return { ok: false, why: `Slack answered ${res.status} for it` }
    }
    // Slack answers a request it does not authorise with its sign-in page, not the file.
    if ((res.headers.get('content-type') ?? '').startsWith('text/html')) {
      await res.body?.cancel()
      return { ok: false, why: 'Slack did not let the app read it (the files:read scope)' }
    }
    const chunks: Uint8Array[] = []
    let size = 0
    for await (const chunk of res.body ?? []) {
      size += chunk.byteLength
      if (size > maxBytes) {
        await res.body?.cancel().catch(() => undefined)
        return { ok: false, why: `it is larger than the ${Math.round(maxBytes / 1048576)} MiB a shared file may be` }
      }
      chunks.push(chunk)
    }
    return { ok: true, bytes: Buffer.concat(chunks) }
  }

  /**
   * A new message answering `eventId` (named in its metadata): its ts. Posted once: when Slack's
   * answer is lost (a dropped connection, a timeout, an HTTP error) it may have taken the post, so the
   * conversation is read for it before it is posted again.
   */
  async post(text: string, eventId: string): Promise<string> {
    const since = Date.now()
    const message: ChatPostMessageArguments = {
      channel: this.channel,
      ...this.thread,
      text: clip(text),
      metadata: { event_type: REPLY_EVENT_TYPE, event_payload: { event_id: eventId } },
    }
    for (let attempt = 1; ; attempt++) {
      try {
        const r = await this.poster.chat.postMessage(message)
        if (!r.ts) throw new Error('Slack posted the message but named no ts')
        return r.ts
      } catch (err) {
        if (slackRefused(err) || attempt >= POST_TRIES) throw err
        const wait = (err as { code?: string; retryAfter?: number }).code === ErrorCode.RateLimitedError
        // A 429 is Slack not taking it; anything else may have been taken.
        if (wait) await sleep((err as { retryAfter: number }).retryAfter * 1000)
        else {
          const found = await this.findReply(eventId, since).catch(() => undefined)
          if (found) return found
          await sleep(Math.min(POST_BACKOFF_MS * 2 ** (attempt - 1), 4_000))
        }
      }
    }
  }

  /**
   * The ts of the reply to `eventId` already posted (a post whose answer was lost), if any: in the
   * thread, or in a direct message's conversation since `since` (ms; a minute's leeway for clocks).
   */
  async findReply(eventId: string, since = Date.now() - 86_400_000): Promise<string | undefined> {
    const mine = (messages: { ts?: string; metadata?: { event_type?: string; event_payload?: unknown } }[] = []) =>
      messages.find(
        (m) =>
          m.metadata?.event_type === REPLY_EVENT_TYPE &&
          (m.metadata.event_payload as { event_id?: unknown } | undefined)?.event_id === eventId,
      )?.ts
    let cursor: string | undefined
    do {
      const page = this.threadTs
        ? await this.client.conversations.replies({
            channel: this.channel,
            ts: this.threadTs,
            include_all_metadata: true,
            limit: 200,
            ...(cursor ? { cursor } : {}),
          })
        : await this.client.conversations.history({
            channel: this.channel,
            oldest: ((since - 60_000) / 1000).toFixed(6),
            include_all_metadata: true,
            limit: 200,
            ...(cursor ? { cursor } : {}),
          })
      const ts = mine(page.messages)
      if (ts) return ts
      cursor = page.response_metadata?.next_cursor || undefined
    } while (cursor)
    return undefined
  }

  async update(ts: string, text: string) {
    this.lastUpdate = Date.now()
    await this.client.chat.update({ channel: this.channel, ts, text: clip(text) })
  }

  /** A card (Block Kit) in the thread; `text` is what notifications show. */
  async postCard(blocks: KnownBlock[], text: string): Promise<string> {
    const r = await this.client.chat.postMessage({ channel: this.channel, ...this.thread, text: clip(text), blocks })
    if (!r.ts) throw new Error('Slack posted the card but named no ts')
    return r.ts
  }

  async updateCard(ts: string, blocks: KnownBlock[], text: string) {
    await this.client.chat.update({ channel: this.channel, ts, text: clip(text), blocks })
  }

  /** A message only `user` sees, in the thread. */
  async ephemeral(user: string, text: string) {
    await this.client.chat.postEphemeral({ channel: this.channel, ...this.thread, user, text: clip(text) })
  }

  /**
   * An update while the text streams, if a second has passed since the last; tried once. Slack
   * away stops the streaming (the whole reply is posted at the end); a refused token is thrown.
   */
  async streaming(ts: string | undefined, text: string) {
    if (!ts || this.streamingOff || Date.now() - this.lastUpdate < STREAM_EVERY_MS) return
    this.lastUpdate = Date.now()
    try {
      await this.streamer.chat.update({ channel: this.channel, ts, text: clip(text) })
    } catch (err) {
      if (isRevocation(err)) throw err
      this.streamingOff = true
    }
  }
}

/**
 * Revokes an intern's bot token as the intern is deleted: best effort (a few tries), since Slack
 * being away must not keep an intern from being deleted; false when it could not be done.
 */
export async function revokeBotToken(token: string, apiUrl: string): Promise<boolean> {
  const client = botClient(token, apiUrl, 'retrying')
  try {
    await client.auth.revoke()
    return true
  } catch (err) {
    // Already revoked or uninstalled: nothing is left to revoke.
    return isRevocation(err)
  }
}

const clip = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text)
