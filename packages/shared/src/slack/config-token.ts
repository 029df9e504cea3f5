import { AppError } from '@roster/protocol'
import type { Db } from '../db.js'
import {
  deleteSlackConfigToken,
  lockSlackConfigToken,
  slackConfigTokenOf,
  upsertSlackConfigToken,
  type SlackConfigTokenRow,
} from '../repositories/slack-config-tokens.js'
import { sealSlackConfig, unsealSlackConfig } from './sealed-credentials.js'
import { slackErrorCode, type SlackAppsApi } from './slack-apps-api.js'

// A workspace's Slack app configuration token (docs/slack.md): an operator stores its refresh
// token (Roster rotates it at once, which proves it and yields a fresh 12-hour token); Roster then
// uses the token to mint and delete interns' apps, rotating it before it expires.

/** Rotated when less than this is left, so a token is never used as it expires. */
export const ROTATE_BEFORE_MS = 30 * 60_000

export interface SlackConfigDeps {
  db: Db
  masterKey: Buffer
  api: SlackAppsApi
}

/** What is shown of a stored token (never the token). */
export interface SlackConfigSummary {
  workspace_id: string
  team_id: string
  expires_at: string
}

const summary = (row: SlackConfigTokenRow): SlackConfigSummary => ({
  workspace_id: row.workspaceId,
  team_id: row.teamId,
  expires_at: row.expiresAt.toISOString(),
})

/** Stores a workspace's configuration token from its refresh token (rotated at once: a spent or unknown one is refused). */
export async function storeSlackConfigToken(
  deps: SlackConfigDeps,
  workspaceId: string,
  refreshToken: string,
): Promise<SlackConfigSummary> {
  let rotated
  try {
    rotated = await deps.api.rotate(refreshToken.trim())
  } catch (err) {
    throw new AppError(
      'invalid_body',
      `Slack refused the refresh token (${slackErrorCode(err) ?? (err as Error).message}): give the refresh token Slack issued with a current app configuration token`,
    )
  }
  const row = {
    workspaceId,
    teamId: rotated.teamId,
    expiresAt: rotated.expiresAt,
    sealed: sealSlackConfig(deps.masterKey, workspaceId, { token: rotated.token, refresh_token: rotated.refreshToken }),
  }
  await upsertSlackConfigToken(deps.db, row)
  return summary(row)
}

export async function slackConfigSummary(db: Db, workspaceId: string): Promise<SlackConfigSummary | undefined> {
  const row = await slackConfigTokenOf(db, workspaceId)
  return row ? summary(row) : undefined
}

export const forgetSlackConfigToken = (db: Db, workspaceId: string) => deleteSlackConfigToken(db, workspaceId)

/**
 * Calls `use` with the workspace's current configuration token, rotated first when it is near its
 * expiry (or when Slack says it expired: once more with a fresh one).
 */
export async function withSlackConfigToken<T>(
  deps: SlackConfigDeps,
  workspaceId: string,
  use: (token: string, teamId: string) => Promise<T>,
): Promise<T> {
  const current = await currentToken(deps, workspaceId, false)
  try {
    return await use(current.token, current.teamId)
  } catch (err) {
    if (slackErrorCode(err) !== 'token_expired') throw err
    const fresh = await currentToken(deps, workspaceId, true)
    return use(fresh.token, fresh.teamId)
  }
}

async function currentToken(deps: SlackConfigDeps, workspaceId: string, force: boolean) {
  const row = await slackConfigTokenOf(deps.db, workspaceId)
  if (!row) throw notConfigured()
  if (!force && !due(row)) return opened(deps, row)
  // Under the row's lock: a rotation another process just did is seen, not repeated with a spent token.
  return deps.db.$transaction(
    async (tx) => {
      const locked = await lockSlackConfigToken(tx, workspaceId)
      if (!locked) throw notConfigured()
      if (locked.expiresAt.getTime() > row.expiresAt.getTime() && !due(locked)) return opened(deps, locked)
      const { refresh_token } = unsealSlackConfig(deps.masterKey, workspaceId, locked.sealed)
      let rotated
      try {
        rotated = await deps.api.rotate(refresh_token)
      } catch (err) {
        throw new AppError(
          'upstream_unavailable',
          `Slack did not rotate the workspace's app configuration token (${slackErrorCode(err) ?? (err as Error).message}); an operator may need to store a new one (docs/slack.md)`,
        )
      }
      const next = {
        workspaceId,
        teamId: rotated.teamId,
        expiresAt: rotated.expiresAt,
        sealed: sealSlackConfig(deps.masterKey, workspaceId, {
          token: rotated.token,
          refresh_token: rotated.refreshToken,
        }),
      }
      await upsertSlackConfigToken(tx, next)
      return { token: rotated.token, teamId: rotated.teamId }
    },
    { timeout: 30_000 },
  )
}

const due = (row: SlackConfigTokenRow) => row.expiresAt.getTime() - Date.now() < ROTATE_BEFORE_MS

const opened = (deps: SlackConfigDeps, row: SlackConfigTokenRow) => ({
  token: unsealSlackConfig(deps.masterKey, row.workspaceId, row.sealed).token,
  teamId: row.teamId,
})

const notConfigured = () =>
  new AppError(
    'slack_not_configured',
    'this workspace holds no Slack app configuration token to make the intern its app with: give slack.app (an app the team made from the manifest), or have an operator store a token (docs/slack.md)',
  )
