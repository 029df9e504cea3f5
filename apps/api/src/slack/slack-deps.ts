import type { ModalView } from '@slack/types'
import { WebClient } from '@slack/web-api'
import { AppError, type ApiConfig, type Db, type ParentLogger } from '@roster/shared'
import { type SlackAppMinter } from '@roster/shared/interns'
import {
  slackAppManifest,
  slackAppsApi,
  slackErrorCode,
  withSlackConfigToken,
  type ExchangeCode,
  type SlackInstallSettings,
} from '@roster/shared/slack'

// What the Slack routes need: the install's settings (absent without a master key, which seals the
// app credentials), the code exchange, and minting an intern's app with its workspace's
// configuration token, through Slack's own client at the configured Slack API URL.

export interface SlackDeps {
  install?: SlackInstallSettings
  exchange: ExchangeCode
  apps?: SlackAppMinter
  /** Opens a modal for the person who clicked (views.open, with the bot token and the click's trigger). */
  openView(botToken: string, triggerId: string, view: ModalView): Promise<void>
}

export function slackDeps(config: ApiConfig, db: Db, log: Pick<ParentLogger, 'warn'>): SlackDeps {
  // One client for every exchange: oauth.v2.access takes the app's credentials in the call, no token.
  const client = new WebClient(undefined, {
    slackApiUrl: config.SLACK_API_URL,
    timeout: 10_000,
    // The person waits in their browser: one quick retry, not Slack's default ten.
    retryConfig: { retries: 1, factor: 1, minTimeout: 200, maxTimeout: 1_000 },
    allowAbsoluteUrls: false,
  })
  const install: SlackInstallSettings | undefined = config.VAULT_MASTER_KEY && {
    masterKey: config.VAULT_MASTER_KEY,
    publicUrl: config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`,
    authorizeUrl: config.SLACK_AUTHORIZE_URL,
    linkTtlSeconds: config.SLACK_INSTALL_LINK_TTL_S,
    stateTtlSeconds: config.SLACK_STATE_TTL_S,
  }
  return {
    install,
    apps:
      install &&
      slackAppMinter({ db, masterKey: install.masterKey, api: slackAppsApi(config.SLACK_API_URL) }, install, log),
    async openView(botToken, triggerId, view) {
      await client.views.open({ token: botToken, trigger_id: triggerId, view })
    },
    async exchange(clientId, clientSecret, code, redirectUri) {
      try {
        const r = await client.oauth.v2.access({
          client_id: clientId,
          client_secret: clientSecret,
          code,
          redirect_uri: redirectUri,
        })
        if (!r.access_token || !r.team?.id) return { ok: false, error: 'no bot token in the answer' }
        return {
          ok: true,
          botToken: r.access_token,
          appId: r.app_id ?? null,
          team: { id: r.team.id, name: r.team.name ?? null },
          botUserId: r.bot_user_id ?? null,
          installerId: r.authed_user?.id ?? null,
        }
      } catch (err) {
        // A platform error (ok: false) names Slack's code (invalid_code, bad_client_secret…).
        return { ok: false, error: slackErrorCode(err) ?? (err as Error).message }
      }
    },
  }
}

function slackAppMinter(
  deps: Parameters<typeof withSlackConfigToken>[0],
  install: SlackInstallSettings,
  log: Pick<ParentLogger, 'warn'>,
): SlackAppMinter {
  return {
    async mint(intern) {
      return withSlackConfigToken(deps, intern.workspaceId, async (token) => {
        try {
          return await deps.api.createApp(token, slackAppManifest(install, intern))
        } catch (err) {
          // token_expired goes back to be rotated; anything else is Slack's refusal or absence.
          if (slackErrorCode(err) === 'token_expired') throw err
          throw new AppError(
            'upstream_unavailable',
            `Slack did not make the intern's app (${slackErrorCode(err) ?? (err as Error).message})`,
          )
        }
      })
    },
    async drop(workspaceId, appId) {
      // Best effort: the create already failed or was a replay; an app left over is named in the log.
      await withSlackConfigToken(deps, workspaceId, (token) => deps.api.deleteApp(token, appId)).catch((err: unknown) =>
        log.warn(
          { appId, workspaceId, error: slackErrorCode(err) ?? (err as Error).message },
          'a Slack app made for a create that did not happen was not deleted',
        ),
      )
    },
  }
}
