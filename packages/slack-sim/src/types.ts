/** An app registered with the stand-in (as a team makes one at api.slack.com/apps). */
export interface SlackSimApp {
  clientId: string
  clientSecret: string
  /** What Slack signs the app's events and clicks with (Roster is given it with the app). */
  signingSecret: string
  appId: string
}

export interface SlackSimCall {
  method: string
  params: Record<string, string>
}

/** A message the bot posted, as it reads now, with every text it had before (its updates). */
export interface SlackSimMessage {
  channel: string
  ts: string
  thread_ts?: string
  text: string
  history: string[]
  /** Its Block Kit blocks, as last posted or updated. */
  blocks?: Record<string, unknown>[]
  /** Its message metadata (event_type and event_payload), as posted. */
  metadata?: { event_type: string; event_payload: Record<string, unknown> }
}

/** An app made through the App Manifest API (apps.manifest.create), with the manifest it was made from. */
export interface SlackSimMintedApp extends SlackSimApp {
  manifest: Record<string, unknown>
  deleted: boolean
}

/**
 * A fault the next calls of a method get (those whose parameters contain `match`, if given): an
 * `ok: false` error, an HTTP status (429 with Retry-After), a slow answer (`delayMs`: the call
 * takes effect at once, its answer comes late, as when the caller dies waiting), or a slow take
 * (`holdMs`: the call takes effect only after that long, as when Slack is slow to take it).
 */
export interface SlackSimFault {
  method: string
  match?: string
  error?: string
  status?: number
  retryAfter?: number
  delayMs?: number
  holdMs?: number
  /** The call takes effect, then the connection is cut before its answer (the caller sees it dropped). */
  drop?: boolean
  times: number
}

/** A file a person uploaded, as Slack's file object describes it (the parts a test reads, and the rest). */
export interface SlackSimFile {
  id: string
  name: string
  size: number
  url_private: string
  url_private_download: string
  [field: string]: unknown
}

/** A person of the workspace, as users.info describes them. */
export interface SlackSimPerson {
  name: string
  realName: string
  displayName: string
}

export interface SlackSim {
  url: string
  /** The Web API's base URL (`SLACK_API_URL`). */
  apiUrl: string
  /** The authorize page (`SLACK_AUTHORIZE_URL`). */
  authorizeUrl: string
  /** The workspace installs land in. */
  team: { id: string; name: string }
  /** The workspace's people users.info knows, by user id (anyone else is user_not_found). */
  people: Map<string, SlackSimPerson>
  /** Registers an app (a team-made one): its credentials. */
  addApp(): SlackSimApp
  /**
   * Issues an app configuration token and its refresh token, as a person does at api.slack.com/apps
   * ("Your App Configuration Tokens"); the token lasts `ttlSeconds` (Slack's: 12 hours).
   */
  issueConfigToken(ttlSeconds?: number): { token: string; refreshToken: string }
  /** Apps made with apps.manifest.create, by app id (deleted ones marked). */
  minted: Map<string, SlackSimMintedApp>
  /**
   * A file a person uploads, to share with a message (the event's `files`): Slack's file object,
   * its private download URL answering a bot token and a sign-in page to anything else.
   */
  addFile(name: string, content: Buffer | string, mimetype?: string): SlackSimFile
  /** Modals opened (views.open), in order, with the view as given. */
  views: { id: string; user?: string; view: Record<string, unknown> }[]
  /**
   * A person submitting an open modal (view_submission), signed, to `url`: `values` by block id
   * (a text, a number, or the chosen option's value). Slack's answer comes back as the response.
   */
  submitView(
    url: string,
    signingSecret: string,
    user: string,
    viewId: string,
    values: Record<string, string>,
  ): Promise<Response>
  /** Downloads of shared files, in order (with whether the token was good). */
  downloads: { fileId: string; authorized: boolean }[]
  /** What the authorize page does: approve (redirects with a code) or deny (`error=access_denied`). */
  decision: 'approve' | 'deny'
  /** Every Web API call, in order (secrets included: the stand-in is the other side). */
  calls: SlackSimCall[]
  /** Bot tokens issued, by app id. */
  tokens: Map<string, string>
  /** Messages posted, in order. */
  messages: SlackSimMessage[]
  /** Faults to inject (consumed as they fire). */
  faults: SlackSimFault[]
  /** Revokes a token, as an uninstall does: its calls answer invalid_auth. */
  revoke(token: string): void
  /** Whether a token was revoked (by auth.revoke or `revoke`). */
  isRevoked(token: string): boolean
  /** Told of every message posted or updated, as it happens (a benchmark times replies with it). */
  watchers: Set<(message: SlackSimMessage) => void>
  /** Messages only one user sees (chat.postEphemeral). */
  ephemerals: { channel: string; user: string; thread_ts?: string; text: string }[]
  /** A click on a button of a message's card, sent to `url` (form-encoded, signed) as Slack sends block_actions. */
  click(
    url: string,
    signingSecret: string,
    user: string,
    message: SlackSimMessage,
    buttonIndex: number,
  ): Promise<Response>
  /** Sends an Events API payload to `url`, signed with the app's signing secret, as Slack does. */
  sendEvent(url: string, signingSecret: string, payload: object, headers?: Record<string, string>): Promise<Response>
  close(): Promise<void>
}
