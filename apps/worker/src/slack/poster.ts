import type { KnownBlock } from '@slack/types'
import { WebClient } from '@slack/web-api'
import { revokeSlackLink, slackErrorCode, unsealSlackSecrets, type Db } from '@roster/shared'

// Posting a turn's reply into its Slack thread with Slack's own client (which waits out a 429's
// Retry-After and retries): a post, then updates, the streaming ones at most about once a second
// (chat.update is a Tier 3 method: ~50 a minute per workspace), tried once each and given up while
// Slack is away (the whole reply is posted after). A reply carries its event's id in its message
// metadata, so a job that died between Slack taking the post and recording its ts finds it again.

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
 * Slack's client for a bot token, at the configured API URL: a few quick tries within a job (Slack's
 * default keeps one going for half an hour); the job's own retries come after. `once`: no retries
 * (a streamed update a later one replaces).
 */
const botClient = (token: string, apiUrl: string, once = false) =>
  new WebClient(token, {
    slackApiUrl: apiUrl,
    allowAbsoluteUrls: false,
    timeout: once ? 5_000 : 15_000,
    retryConfig: once ? { retries: 0 } : { retries: 4, factor: 2, minTimeout: 250, maxTimeout: 4_000 },
  })

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
  private readonly streamer: WebClient
  private lastUpdate = 0
  /** Set once a streamed update failed: Slack is away, and the rest of the reply waits for the end. */
  private streamingOff = false

  constructor(
    private readonly token: string,
    private readonly apiUrl: string,
    private readonly channel: string,
    private readonly threadTs: string,
  ) {
    this.client = botClient(token, apiUrl)
    this.streamer = botClient(token, apiUrl, true)
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

  /** A new message in the thread answering `eventId` (named in its metadata): its ts. */
  async post(text: string, eventId: string): Promise<string> {
    const r = await this.client.chat.postMessage({
      channel: this.channel,
      thread_ts: this.threadTs,
      text: clip(text),
      metadata: { event_type: REPLY_EVENT_TYPE, event_payload: { event_id: eventId } },
    })
    if (!r.ts) throw new Error('Slack posted the message but named no ts')
    return r.ts
  }

  /** The ts of the reply to `eventId` already in the thread (a post whose answer was lost), if any. */
  async findReply(eventId: string): Promise<string | undefined> {
    let cursor: string | undefined
    do {
      const page = await this.client.conversations.replies({
        channel: this.channel,
        ts: this.threadTs,
        include_all_metadata: true,
        limit: 200,
        ...(cursor ? { cursor } : {}),
      })
      const mine = page.messages?.find(
        (m) =>
          m.metadata?.event_type === REPLY_EVENT_TYPE &&
          (m.metadata.event_payload as { event_id?: unknown } | undefined)?.event_id === eventId,
      )
      if (mine?.ts) return mine.ts
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
    const r = await this.client.chat.postMessage({
      channel: this.channel,
      thread_ts: this.threadTs,
      text: clip(text),
      blocks,
    })
    if (!r.ts) throw new Error('Slack posted the card but named no ts')
    return r.ts
  }

  async updateCard(ts: string, blocks: KnownBlock[], text: string) {
    await this.client.chat.update({ channel: this.channel, ts, text: clip(text), blocks })
  }

  /** A message only `user` sees, in the thread. */
  async ephemeral(user: string, text: string) {
    await this.client.chat.postEphemeral({ channel: this.channel, thread_ts: this.threadTs, user, text: clip(text) })
  }

  /**
   * Shows that the intern works on the thread (Slack clears it when the reply comes). Not waited for:
   * best effort (Slack allows it in assistant threads only), and never on the turn's way.
   */
  showWorking() {
    void this.client.assistant.threads
      .setStatus({ channel_id: this.channel, thread_ts: this.threadTs, status: 'is working on it…' })
      .catch(() => undefined)
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
  const client = botClient(token, apiUrl)
  try {
    await client.auth.revoke()
    return true
  } catch (err) {
    // Already revoked or uninstalled: nothing is left to revoke.
    return isRevocation(err)
  }
}

const clip = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text)
