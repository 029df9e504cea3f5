import type { KnownBlock } from '@slack/types'
import { WebClient } from '@slack/web-api'
import { revokeSlackLink, unsealSlackSecrets, type Db } from '@roster/shared'

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

/** Revokes the link when Slack refused its bot token (nothing more is posted); whether it did. */
export async function revokedBy(db: Db, internId: string, err: unknown): Promise<boolean> {
  if (!isRevocation(err)) return false
  await revokeSlackLink(db, internId, `Slack refused the bot token (${(err as Error).message}); install again`)
  return true
}

/**
 * Slack's client for a bot token, at the configured API URL: a few quick tries within a job (Slack's
 * default keeps one going for half an hour); the job's own retries come after.
 */
const botClient = (token: string, apiUrl: string) =>
  new WebClient(token, {
    slackApiUrl: apiUrl,
    allowAbsoluteUrls: false,
    timeout: 15_000,
    retryConfig: { retries: 4, factor: 2, minTimeout: 250, maxTimeout: 4_000 },
  })

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

export class SlackPoster {
  private readonly client: WebClient
  private lastUpdate = 0

  constructor(
    token: string,
    apiUrl: string,
    private readonly channel: string,
    private readonly threadTs: string,
  ) {
    this.client = botClient(token, apiUrl)
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

  /**
   * Shows that the intern works on the thread (Slack clears it when the reply comes). Not waited for:
   * best effort (Slack allows it in assistant threads only), and never on the turn's way.
   */
  showWorking() {
    void this.client.assistant.threads
      .setStatus({ channel_id: this.channel, thread_ts: this.threadTs, status: 'is working on it…' })
      .catch(() => undefined)
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
