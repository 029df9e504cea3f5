import { WebClient } from '@slack/web-api'
import type { SlackManifest } from './manifest.js'

// Slack's App Manifest API, through Slack's own client at the configured Slack API URL: a
// workspace's app configuration token rotated (tooling.tokens.rotate) and an intern's own app made
// from its manifest (apps.manifest.create) and deleted with it (apps.manifest.delete).

export interface RotatedConfigToken {
  token: string
  /** Single use: the one given to rotate is spent. */
  refreshToken: string
  /** The Slack workspace the token makes apps in. */
  teamId: string
  expiresAt: Date
}

/** A minted app's credentials, as apps.manifest.create answers them. */
export interface MintedSlackApp {
  appId: string
  clientId: string
  clientSecret: string
  signingSecret: string
}

export interface SlackAppsApi {
  rotate(refreshToken: string): Promise<RotatedConfigToken>
  createApp(configToken: string, manifest: SlackManifest): Promise<MintedSlackApp>
  deleteApp(configToken: string, appId: string): Promise<void>
}

/** Slack's error code in a refused call (`ok: false`), if it was one. */
export function slackErrorCode(err: unknown): string | undefined {
  const code = (err as { data?: { error?: unknown } } | undefined)?.data?.error
  return typeof code === 'string' ? code : undefined
}

export function slackAppsApi(apiUrl: string): SlackAppsApi {
  // No token on the client: each call names the one it uses (a config token, or none to rotate).
  const client = new WebClient(undefined, {
    slackApiUrl: apiUrl,
    allowAbsoluteUrls: false,
    timeout: 15_000,
    // A person may be waiting on a create: a few quick tries, not Slack's default half hour.
    retryConfig: { retries: 2, factor: 2, minTimeout: 250, maxTimeout: 2_000 },
  })
  return {
    async rotate(refreshToken) {
      const r = await client.tooling.tokens.rotate({ refresh_token: refreshToken })
      if (!r.token || !r.refresh_token || !r.team_id || !r.exp)
        throw new Error('Slack rotated the configuration token but did not name the new one, its workspace or expiry')
      return { token: r.token, refreshToken: r.refresh_token, teamId: r.team_id, expiresAt: new Date(r.exp * 1000) }
    },
    async createApp(configToken, manifest) {
      const r = await client.apps.manifest.create({
        token: configToken,
        manifest,
      })
      const c = r.credentials
      if (!r.app_id || !c?.client_id || !c.client_secret || !c.signing_secret)
        throw new Error('Slack made the app but did not name its id or credentials')
      return { appId: r.app_id, clientId: c.client_id, clientSecret: c.client_secret, signingSecret: c.signing_secret }
    },
    async deleteApp(configToken, appId) {
      await client.apps.manifest.delete({ token: configToken, app_id: appId })
    },
  }
}
