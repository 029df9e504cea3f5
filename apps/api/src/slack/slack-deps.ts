import { WebClient } from '@slack/web-api'
import type { ApiConfig, ExchangeCode, SlackInstallSettings } from '@roster/shared'

// What the Slack routes need: the install's settings (absent without a master key, which seals the
// app credentials) and the code exchange, through Slack's own client, at the configured Slack API URL.

export interface SlackDeps {
  install?: SlackInstallSettings
  exchange: ExchangeCode
}

export function slackDeps(config: ApiConfig): SlackDeps {
  // One client for every exchange: oauth.v2.access takes the app's credentials in the call, no token.
  const client = new WebClient(undefined, {
    slackApiUrl: config.SLACK_API_URL,
    timeout: 10_000,
    // The person waits in their browser: one quick retry, not Slack's default ten.
    retryConfig: { retries: 1, factor: 1, minTimeout: 200, maxTimeout: 1_000 },
    allowAbsoluteUrls: false,
  })
  return {
    install: config.VAULT_MASTER_KEY && {
      masterKey: config.VAULT_MASTER_KEY,
      publicUrl: config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`,
      authorizeUrl: config.SLACK_AUTHORIZE_URL,
      linkTtlSeconds: config.SLACK_INSTALL_LINK_TTL_S,
      stateTtlSeconds: config.SLACK_STATE_TTL_S,
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
        const data = (err as { data?: { error?: unknown } }).data
        return { ok: false, error: typeof data?.error === 'string' ? data.error : (err as Error).message }
      }
    },
  }
}
