import type { KnownBlock } from '@slack/types'
import { WebClient } from '@slack/web-api'

// Posting a turn's reply into its Slack thread with Slack's own client (which waits out a 429's
// Retry-After and retries): a post, then updates, the streaming ones at most about once a second
// (chat.update is a Tier 3 method: ~50 a minute per workspace).

/** Slack cuts a message's text at 40,000 characters; a reply keeps under it. */
const MAX_TEXT = 39_000
const STREAM_EVERY_MS = 1_000

/** Slack's answers that mean the bot token is no longer any good: the link is revoked. */
const REVOKED = new Set(['invalid_auth', 'token_revoked', 'account_inactive', 'not_authed', 'token_expired'])

export const isRevocation = (err: unknown) => {
  const code = (err as { data?: { error?: unknown } }).data?.error
  return typeof code === 'string' && REVOKED.has(code)
}

export class SlackPoster {
  private readonly client: WebClient
  private lastUpdate = 0

  constructor(
    token: string,
    apiUrl: string,
    private readonly channel: string,
    private readonly threadTs: string,
  ) {
    this.client = new WebClient(token, {
      slackApiUrl: apiUrl,
      allowAbsoluteUrls: false,
      timeout: 15_000,
      // A few quick tries within the job (Slack's default keeps one going for half an hour); the job's
      // own retries come after, and a retried job never posts twice.
      retryConfig: { retries: 4, factor: 2, minTimeout: 250, maxTimeout: 4_000 },
    })
  }

  /** A new message in the thread: its ts. */
  async post(text: string): Promise<string> {
    const r = await this.client.chat.postMessage({ channel: this.channel, thread_ts: this.threadTs, text: clip(text) })
    if (!r.ts) throw new Error('Slack posted the message but named no ts')
    return r.ts
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

  /** An update while the text streams, if a second has passed since the last. */
  async streaming(ts: string, text: string) {
    if (Date.now() - this.lastUpdate < STREAM_EVERY_MS) return
    await this.update(ts, text)
  }
}

/**
 * Revokes an intern's bot token as the intern is deleted: best effort (a few tries), since Slack
 * being away must not keep an intern from being deleted; false when it could not be done.
 */
export async function revokeBotToken(token: string, apiUrl: string): Promise<boolean> {
  const client = new WebClient(token, {
    slackApiUrl: apiUrl,
    allowAbsoluteUrls: false,
    timeout: 10_000,
    retryConfig: { retries: 3, factor: 2, minTimeout: 250, maxTimeout: 2_000 },
  })
  try {
    await client.auth.revoke()
    return true
  } catch (err) {
    // Already revoked or uninstalled: nothing is left to revoke.
    return isRevocation(err)
  }
}

/** Shows that the intern works on the thread (Slack clears it when the reply comes); best effort. */
export async function setThreadStatus(
  token: string,
  apiUrl: string,
  channel: string,
  threadTs: string,
  status: string,
) {
  const client = new WebClient(token, {
    slackApiUrl: apiUrl,
    allowAbsoluteUrls: false,
    timeout: 5_000,
    retryConfig: { retries: 0 },
  })
  await client.assistant.threads.setStatus({ channel_id: channel, thread_ts: threadTs, status }).catch(() => undefined)
}

const clip = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text)
