import { z } from 'zod'

// An intern's link to Slack, as the API takes and shows it (docs/slack.md). Credentials go in,
// never out: the view names the app and the workspace it is installed in, not a secret.

/** A team-made app's credentials, from its Basic Information page (the app made from Roster's manifest). */
export const SlackAppCredentials = z
  .strictObject({
    client_id: z.string().regex(/^\d+\.\d+$/, "the app's Client ID, such as 1234567890.1234567890"),
    client_secret: z.string().min(16).max(200),
    signing_secret: z.string().min(16).max(200),
  })
  .meta({ id: 'SlackAppCredentials' })

/**
 * `slack` on `POST /interns`: the intern waits in awaiting_slack_install until the app is installed.
 * Without `app`, Roster mints the intern an app with the workspace's configuration token.
 */
export const CreateSlackLink = z
  .strictObject({
    app: SlackAppCredentials.optional(),
    /** Slack user ids who may answer the intern's questions in any thread (a thread's starter always may). */
    approvers: z
      .array(z.string().regex(/^[UW][A-Z0-9]{2,20}$/, 'a Slack user id, such as U0123ABCD'))
      .max(50)
      .optional(),
  })
  .meta({ id: 'CreateSlackLink' })
export type CreateSlackLink = z.infer<typeof CreateSlackLink>

export const SlackLinkState = z.enum(['awaiting_install', 'installed', 'revoked'])
export type SlackLinkState = z.infer<typeof SlackLinkState>

export const SlackLinkView = z
  .object({
    intern_id: z.uuid(),
    state: SlackLinkState,
    /** Why the last install did not complete, or why the link was revoked; null otherwise. */
    reason: z.string().nullable(),
    origin: z.enum(['team', 'minted']),
    client_id: z.string(),
    /** Where a person installs the app (a browser link, valid for a while; GET this again for a fresh one). */
    install_url: z.url(),
    app_id: z.string().nullable(),
    team: z.object({ id: z.string(), name: z.string().nullable() }).nullable(),
    bot_user_id: z.string().nullable(),
    installed_by: z.string().nullable(),
    installed_at: z.iso.datetime().nullable(),
    provision_on_install: z.boolean(),
    approvers: z.array(z.string()),
  })
  .meta({ id: 'SlackLink' })
export type SlackLinkView = z.infer<typeof SlackLinkView>

/**
 * What a question card's "Answer…" button carries instead of an answer: open the question's form
 * (the API opens it, within Slack's 3 seconds of the click); never an answer given to a run.
 */
export const SLACK_OPEN_FORM = '__form__'
