import { AppError } from '@roster/protocol'
import type { Db } from '../db.js'
import type { SlackLinkView } from '@roster/protocol'
import { slackLinkOf } from '../repositories/slack-links.js'
import { slackInstallUrl, type SlackInstallSettings } from './install.js'

/** An intern's Slack link as an operator reads it (the admin CLI): all the API shows but the signed install link. */
export async function slackLinkSummary(db: Db, internId: string): Promise<Omit<SlackLinkView, 'install_url'>> {
  const link = await slackLinkOf(db, internId)
  if (!link) throw new AppError('not_found', `intern ${internId} is not linked to Slack`)
  return {
    intern_id: link.internId,
    state: link.state as SlackLinkView['state'],
    reason: link.reason,
    origin: link.origin as SlackLinkView['origin'],
    client_id: link.clientId,
    app_id: link.appId,
    team: link.teamId ? { id: link.teamId, name: link.teamName } : null,
    bot_user_id: link.botUserId,
    installed_by: link.installerId,
    installed_at: link.installedAt?.toISOString() ?? null,
    provision_on_install: link.provisionOnInstall,
    approvers: link.approvers,
  }
}

/** An intern's Slack link as the API shows it (never a secret); 404 when it has none. */
export async function slackLinkView(db: Db, s: SlackInstallSettings, internId: string): Promise<SlackLinkView> {
  const summary = await slackLinkSummary(db, internId)
  return { ...summary, install_url: slackInstallUrl(s, internId) }
}
