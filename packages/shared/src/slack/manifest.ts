import type { AppsManifestCreateArguments } from '@slack/web-api'
import { SLACK_BOT_EVENTS, SLACK_BOT_SCOPES, slackCallbackUrl, type SlackInstallSettings } from './install.js'

/** Slack's app manifest, as Slack's own client types it. */
export type SlackManifest = AppsManifestCreateArguments['manifest']

// The Slack app manifest for an intern's own app (Slack's app manifest schema): a team pastes it
// into "Create an app → From a manifest", then gives Roster the app's credentials.

export function slackAppManifest(
  s: SlackInstallSettings,
  intern: { id: string; name: string; description: string | null },
): SlackManifest {
  // Slack: the app's name and bot's display name at most 35 characters, the description 140.
  const name = intern.name.slice(0, 35)
  return {
    display_information: {
      name,
      description: (intern.description ?? `${name}, an intern of Roster`).slice(0, 140),
    },
    features: {
      app_home: { home_tab_enabled: false, messages_tab_enabled: true, messages_tab_read_only_enabled: false },
      bot_user: { display_name: name, always_online: true },
    },
    oauth_config: {
      redirect_urls: [slackCallbackUrl(s)],
      // Object.keys loses the literal names; Slack's type then checks each is a bot scope it knows.
      scopes: { bot: Object.keys(SLACK_BOT_SCOPES) as (keyof typeof SLACK_BOT_SCOPES)[] },
    },
    settings: {
      event_subscriptions: {
        request_url: `${s.publicUrl}/api/v1/slack/events/${intern.id}`,
        bot_events: [...SLACK_BOT_EVENTS],
      },
      interactivity: { is_enabled: true, request_url: `${s.publicUrl}/api/v1/slack/interactivity/${intern.id}` },
      org_deploy_enabled: false,
      socket_mode_enabled: false,
      token_rotation_enabled: false,
    },
  }
}
