import { randomBytes } from 'node:crypto'
import { AppError } from '@roster/protocol'
import type { Db } from '../db.js'
import type { AfterCommit } from '../interns/lifecycle.js'
import { transition } from '../intern-state.js'
import { isUuid } from '../interns/access.js'
import { enqueueInTx } from '../repositories/outbox.js'
import { lockIntern } from '../repositories/interns.js'
import {
  markInstalled,
  setSlackLinkReason,
  slackLinkOf,
  startInstall,
  takeInstallNonce,
} from '../repositories/slack-links.js'
import { sealSlackSecrets, unsealSlackSecrets } from './sealed-credentials.js'
import { checkToken, signToken } from './signed-token.js'

// Installing an intern's Slack app (OAuth v2): an install link a person opens (signed, so a
// browser needs no API key), Slack's authorize page with a signed single-use `state`, and the
// callback that exchanges the code, seals the bot token and moves the intern on: queued with its
// provisioning job when the create asked for provisioning, else stopped. A declined install, a
// bad, replayed or expired state or an invalid code leaves the intern awaiting its install, the
// reason on its link, and the install can be tried again.

/** The bot scopes an intern's app asks for, and why (docs/slack.md). */
export const SLACK_BOT_SCOPES = {
  'app_mentions:read': 'hear the messages that mention it in channels it is in',
  'chat:write': 'answer in threads and direct messages, and update its answer as it streams',
  'im:history': 'read the direct messages people send it',
  'im:read': 'know its direct-message conversations',
  'im:write': 'answer in direct messages',
  'channels:history': 'hear the replies in threads it takes part in, in public channels it is in',
  'groups:history': 'hear the replies in threads it takes part in, in private channels it is in',
  'files:read': 'fetch the files people share with a message, into its workspace',
  'users:read': 'name who asked, in the prompt (their display name, beside their Slack id)',
} as const

/** Events the app subscribes to. */
export const SLACK_BOT_EVENTS = [
  'app_mention',
  'message.im',
  // Replies in threads it takes part in (the rest of a channel's messages are ignored as they come).
  'message.channels',
  'message.groups',
  'app_uninstalled',
  'tokens_revoked',
] as const

export interface SlackInstallSettings {
  masterKey: Buffer
  /** Roster's public base URL (no trailing slash), as Slack and browsers reach it. */
  publicUrl: string
  /** Slack's authorize page (https://slack.com/oauth/v2/authorize). */
  authorizeUrl: string
  /** How long an install link stays good, and how long Slack's state does (seconds). */
  linkTtlSeconds: number
  stateTtlSeconds: number
}

/** What Slack's oauth.v2.access answered: the install, or why not (its `error`). */
export type CodeExchange =
  | {
      ok: true
      botToken: string
      appId: string | null
      team: { id: string; name: string | null }
      botUserId: string | null
      installerId: string | null
    }
  | { ok: false; error: string }

/** Exchanges an authorization code for the install (oauth.v2.access, with the app's credentials). */
export type ExchangeCode = (
  clientId: string,
  clientSecret: string,
  code: string,
  redirectUri: string,
) => Promise<CodeExchange>

export const slackCallbackUrl = (s: SlackInstallSettings) => `${s.publicUrl}/api/v1/slack/oauth/callback`

/** The link a person opens to install the intern's app: good for `linkTtlSeconds`. */
export const slackInstallUrl = (s: SlackInstallSettings, internId: string) =>
  `${s.publicUrl}/api/v1/interns/${internId}/slack/install?grant=${signToken(s.masterKey, 'install-link', { intern: internId }, s.linkTtlSeconds)}`

/** Whether an install link's grant is good for this intern. */
export function installGrantValid(s: SlackInstallSettings, internId: string, grant: string | undefined): boolean {
  const c = checkToken(s.masterKey, 'install-link', grant)
  return c.ok && c.payload.intern === internId
}

/**
 * Starts an install: a fresh nonce on the link (an earlier install's state then fails), and Slack's
 * authorize URL with the state that names it. 404 when the intern has no link; 409 once installed.
 */
export async function beginSlackInstall(db: Db, s: SlackInstallSettings, internId: string): Promise<string> {
  const link = await slackLinkOf(db, internId)
  if (!link) throw new AppError('not_found', `intern ${internId} is not linked to Slack`)
  const nonce = randomBytes(16).toString('base64url')
  if (!(await startInstall(db, internId, nonce)))
    throw new AppError('already_running', `intern ${internId}'s Slack app is already installed`)
  const state = signToken(s.masterKey, 'oauth-state', { intern: internId, nonce }, s.stateTtlSeconds)
  const url = new URL(s.authorizeUrl)
  url.searchParams.set('client_id', link.clientId)
  url.searchParams.set('scope', Object.keys(SLACK_BOT_SCOPES).join(','))
  url.searchParams.set('redirect_uri', slackCallbackUrl(s))
  url.searchParams.set('state', state)
  return url.toString()
}

export type InstallOutcome =
  | { ok: true; internId: string; status: 'queued' | 'stopped'; team: string | null }
  | { ok: false; internId?: string; reason: string }

/**
 * Slack's redirect back: `code` and `state`, or `error` (access_denied) and `state`. Every failure
 * is an outcome (shown to the person), recorded on the link where the state named one.
 */
export async function completeSlackInstall(
  db: Db,
  after: AfterCommit,
  s: SlackInstallSettings,
  query: { code?: string; state?: string; error?: string },
  exchange: ExchangeCode,
): Promise<InstallOutcome> {
  const checked = checkToken(s.masterKey, 'oauth-state', query.state)
  const unsigned = 'the install came back with a state Roster did not sign'
  // A state Roster signed names its intern: why its install did not complete is kept on the link
  // (unless the link is installed meanwhile: an old tab's state says nothing about it).
  const failedBefore = async (internId: string, reason: string): Promise<InstallOutcome> => {
    await setSlackLinkReason(db, internId, reason, { unlessInstalled: true })
    return { ok: false, internId, reason }
  }
  if (!checked.ok) {
    if (checked.why !== 'expired') return { ok: false, reason: unsigned }
    const reason = 'the install took too long (its state expired); open the install link again'
    return checked.payload.intern && isUuid(checked.payload.intern)
      ? failedBefore(checked.payload.intern, reason)
      : { ok: false, reason }
  }
  const { intern: internId, nonce } = checked.payload
  if (!internId || !nonce || !isUuid(internId)) return { ok: false, reason: unsigned }
  const failed = async (reason: string): Promise<InstallOutcome> => {
    await setSlackLinkReason(db, internId, reason)
    return { ok: false, internId, reason }
  }
  // Single use: a replayed state, or one an install begun since has replaced, finds no nonce to take.
  if (!(await takeInstallNonce(db, internId, nonce)))
    return failedBefore(
      internId,
      'this install was already completed or replaced by a newer one; open the install link again',
    )
  if (query.error)
    return failed(`the install was not approved in Slack (${query.error.slice(0, 100)}); it can be tried again`)
  if (!query.code) return failed('Slack sent no authorization code; try the install again')
  const link = await slackLinkOf(db, internId)
  if (!link) return { ok: false, internId, reason: 'the intern is no longer linked to Slack' }
  const secrets = unsealSlackSecrets(s.masterKey, internId, link.sealed)
  const got = await exchange(link.clientId, secrets.client_secret, query.code, slackCallbackUrl(s)).catch(
    (err: unknown): CodeExchange => ({ ok: false, error: `Slack could not be reached (${(err as Error).message})` }),
  )
  if (!got.ok) return failed(`Slack refused the install's code (${got.error}); try the install again`)
  const sealed = sealSlackSecrets(s.masterKey, internId, { ...secrets, bot_token: got.botToken })
  const status = await db.$transaction(async (tx) => {
    await markInstalled(tx, internId, {
      sealed,
      appId: got.appId,
      teamId: got.team.id,
      teamName: got.team.name,
      botUserId: got.botUserId,
      installerId: got.installerId,
    })
    const row = await lockIntern(tx, internId)
    // Only an intern still waiting moves on (a reinstall after a revocation leaves its status be).
    if (row?.status !== 'awaiting_slack_install') return undefined
    const to = link.provisionOnInstall ? 'queued' : 'stopped'
    const next = await transition(tx, {
      internId,
      from: ['awaiting_slack_install'],
      to,
      set: link.provisionOnInstall ? { progress: null, lastFailureMessage: null, bumpGeneration: true } : {},
    })
    if (to === 'queued') await enqueueInTx(tx, 'intern.provision', { internId, generation: next!.provision_generation })
    return to
  })
  if (status === 'queued') after.outboxWritten()
  after.internsChanged([internId])
  return { ok: true, internId, status: status ?? 'stopped', team: got.team.name }
}
