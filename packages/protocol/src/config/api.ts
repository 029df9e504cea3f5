import { z } from 'zod'
import {
  flag,
  postgresUrlValue,
  snapshotMb,
  list,
  port,
  ms,
  runtimeToken,
  masterKey,
  shared,
  namePairs,
  egressHosts,
  fleetSettings,
  backgroundTurnSettings,
  fairUseSettings,
} from './values.js'
import { listenerSettings } from '../listener-settings.js'
import { DATA_REGIONS, type DataRegion } from '../guardrail-policy.js'

// The API process's settings (apps/api).

export const ApiConfig = z
  .object({
    ...shared,
    HOST: z.string().min(1).default('127.0.0.1').describe('Where the API listens.'),
    PORT: port.default(3000).describe("The API's port."),
    VAULT_MASTER_KEY: masterKey.describe(
      "32 bytes (64 hex characters or base64); seals every vault's data key, never stored in the database. Without it reads are served and intern creation answers `500 configuration_error`; `npm start` uses the database's own development key. A key that is not the one that sealed the database's vaults stops the process at start-up, naming the fix.",
    ),
    DATA_REGION_HOSTS: namePairs('host=region (region: global, europe or us)', (raw) => {
      const region = raw.toLowerCase() === 'eu' ? 'europe' : raw.toLowerCase()
      return (DATA_REGIONS as readonly string[]).includes(region) ? (region as DataRegion) : undefined
    }).describe(
      "Which region each `Host` name (no port) serves, for guardrails' `allowed_data_regions`: `host=region` pairs, comma-separated (e.g. `eu.roster.example=europe,us.roster.example=us`; `eu` means `europe`). A request at any other host is in `global`.",
    ),
    REGIONAL_HOSTS: list
      .default([])
      .describe('`Host` names (no port), comma-separated, on which intern operations answer 403.'),
    INTERACTION_DEADLINE_MS: ms
      .default(300_000)
      .describe(
        "The runtime hosts' deadline for an answer to a question (as they have it): the console's inbox lists questions no older.",
      ),
    INTERN_CREATE_DEADLINE_MS: ms
      .default(10_000)
      .describe(
        'Deadline of `POST /interns`; past it the caller gets 408 and may retry with the same `Idempotency-Key`.',
      ),
    INTERN_LIMIT_PER_MEMBER: z.coerce
      .number()
      .int()
      .positive()
      .default(100)
      .describe('Interns one member may own in a workspace; past it creation answers `409 intern_limit_reached`.'),
    VAULT_LOCK_TIMEOUT_MS: ms
      .default(2_000)
      .describe('How long vault creation waits for a busy keyring before answering `502 upstream_unavailable`.'),
    CONSOLE_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(256)
      .default(2)
      .describe(
        "Web console requests (its files, and calls with its session cookie) one API process serves at once; the rest take turns, so the console's crowds never hold the gateway's requests.",
      ),
    ANALYTICS_CACHE_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(5_000)
      .describe(
        'How long an analytics answer is shared with every identical query of the same account (a spend page open on many screens); 0: never.',
      ),
    ANALYTICS_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(64)
      .default(2)
      .describe('Analytics queries one API process runs at once; the rest wait their turn.'),
    AUTH_CACHE_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(5_000)
      .describe('How long a resolved API key is trusted before it is looked up again (the revocation delay).'),
    MODEL_CATALOGUE: z
      .string()
      .min(1)
      .optional()
      .describe(
        "Path of the model catalogue (JSON), validated at start-up. Unset: the API serves no models (`npm start` then serves the upstream simulator's demo catalogue).",
      ),
    INTERN_DEFAULT_MODEL: z
      .string()
      .min(1)
      .optional()
      .describe(
        'The model of an intern whose `model` is null (runtime hosts are told it as they join the fleet). Unset: the best model the catalogue serves (docs/interns.md).',
      ),
    PUBLIC_URL: z
      .url()
      .refine((u) => /^https?:\/\//.test(u), 'must be an http:// or https:// URL')
      .transform((u) => u.replace(/\/+$/, ''))
      .optional()
      .describe(
        "Roster's base URL as browsers and Slack reach it (e.g. `https://roster.example`), for the links it hands out: Slack install links, the app manifest's event and redirect URLs. Unset: `http://HOST:PORT`.",
      ),
    SLACK_AUTHORIZE_URL: z
      .url()
      .default('https://slack.com/oauth/v2/authorize')
      .describe("Slack's OAuth v2 authorize page, where an install link sends a person."),
    SLACK_INSTALL_LINK_TTL_S: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(7 * 86_400)
      .describe('How long an install link (`GET /interns/{id}/slack` `install_url`) stays good, in seconds.'),
    SLACK_STATE_TTL_S: z.coerce
      .number()
      .int()
      .min(30)
      .max(3_600)
      .default(600)
      .describe("How long a person has on Slack's authorize page before the install's state expires, in seconds."),
    OPERATOR_TOKEN: z
      .string()
      .min(32, 'must be at least 32 characters')
      .optional()
      .describe(
        "The operator's credential for the fleet's reads and drain under `/api/v1/operator/` (bearer) and the web console's fleet page (signed in with it); unset: none. The worker's value, where both run.",
      ),
    OPERATOR_DASHBOARD_URL: z
      .url()
      .optional()
      .describe(
        "Where the queue dashboard (the worker's operator surface) is reached; the console's fleet page links to it.",
      ),
    CONSOLE_SESSION_TTL_S: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(12 * 3_600)
      .describe('How long a web console sign-in lasts, in seconds (signing out ends it sooner).'),
    DATABASE_READ_URL: postgresUrlValue
      .optional()
      .describe(
        "A Postgres streaming replica of DATABASE_URL's database: when set, analytics (`/analytics/query`, `/activity`), the generations' lists and reads (`/generations`, `/generation`, which falls back to the primary for one not yet replayed) and the audit log are read there, out of the way of the writes. Unset: everything on DATABASE_URL.",
      ),
    OIDC_ISSUER: z
      .url()
      .optional()
      .describe(
        "Single sign-on to the web console: the OpenID Connect issuer (Okta, Google, Entra ID, Keycloak, Authentik…), whose `/.well-known/openid-configuration` Roster reads; members sign in as themselves, matched by e-mail (docs/console.md). Unset: keys and the operator's token only.",
      ),
    OIDC_CLIENT_ID: z
      .string()
      .min(1)
      .optional()
      .describe("Roster's client id at the issuer (needed with OIDC_ISSUER)."),
    OIDC_CLIENT_SECRET: z
      .string()
      .min(1)
      .optional()
      .describe('Its client secret (a confidential client); unset: a public client (PKCE alone).'),
    OIDC_REDIRECT_URL: z
      .url()
      .optional()
      .describe(
        "The callback registered at the issuer; unset: `{scheme}://{host}/api/v1/console/sso/callback` as the browser reached Roster (set it behind a proxy's path prefix).",
      ),
    OIDC_SCOPES: z.string().min(1).default('openid email profile').describe('The scopes asked for.'),
    OIDC_DISPLAY_NAME: z
      .string()
      .min(1)
      .max(60)
      .default('single sign-on')
      .describe('What the sign-in button names ("Sign in with …").'),
    OIDC_REQUIRE_VERIFIED_EMAIL: flag
      .default(true)
      .describe(
        'Refuse an e-mail the issuer does not say is verified (`email_verified`); turn off for an issuer that never sends it (Entra ID) and vouches for its e-mails.',
      ),
    OIDC_ALLOW_HTTP: flag
      .default(false)
      .describe('Allow an http:// issuer (development and tests only: the tokens travel in clear).'),
    GATEWAY_PASS_THROUGH: flag
      .default(true)
      .describe(
        'Answer `/chat/completions` and `/messages` with the provider\'s own reply where the endpoint speaks the door\'s protocol and nothing changes what it said (docs/gateway.md, "Pass-through"); off: every reply is translated.',
      ),
    WEB_FETCH_PRIVATE_NETWORKS: z
      .enum(['refuse', 'allow'])
      .default('refuse')
      .describe('The `web_fetch` server tool refuses private, loopback and link-local addresses unless `allow`.'),
    WEB_FETCH_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(10 * 1024 * 1024)
      .default(256 * 1024)
      .describe('Largest body `web_fetch` reads (longer ones are truncated).'),
    WEB_FETCH_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(10_000)
      .describe('Time limit of one `web_fetch`.'),
    WEB_SEARCH_ENGINE: z
      .enum(['searxng', 'brave', 'tavily', 'exa'])
      .optional()
      .describe(
        'The search engine `openrouter:web_search` uses where the endpoint has no search of its own (`engine: auto`); unset: the first configured of SearXNG, Brave, Tavily and Exa. A request may name any configured one.',
      ),
    SEARXNG_URL: z
      .url()
      .optional()
      .describe(
        "A SearXNG instance `openrouter:web_search` queries through its JSON API (its settings must list `json` among `search.formats`), e.g. http://127.0.0.1:8888. Its address is the operator's: private addresses are allowed for it.",
      ),
    BRAVE_SEARCH_API_KEY: z
      .string()
      .min(1)
      .optional()
      .describe('A Brave Search API key: `openrouter:web_search` may search with Brave.'),
    BRAVE_SEARCH_BASE_URL: z
      .url()
      .optional()
      .describe("Brave Search's API address (default https://api.search.brave.com/)."),
    TAVILY_API_KEY: z
      .string()
      .min(1)
      .optional()
      .describe('A Tavily API key: `openrouter:web_search` may search with Tavily.'),
    TAVILY_BASE_URL: z.url().optional().describe("Tavily's API address (default https://api.tavily.com/)."),
    EXA_API_KEY: z.string().min(1).optional().describe('An Exa API key: `openrouter:web_search` may search with Exa.'),
    EXA_BASE_URL: z.url().optional().describe("Exa's API address (default https://api.exa.ai/)."),
    FILES_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(100 * 1024 * 1024)
      .default(20 * 1024 * 1024)
      .describe('Largest file the Files API takes (and `openrouter:files` writes); a larger upload is refused 413.'),
    FILES_WORKSPACE_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .default(1024 * 1024 * 1024)
      .describe("Most bytes a workspace's files hold together; an upload past it is refused 413."),
    MODERATION_URL: z
      .url()
      .optional()
      .describe(
        "A moderation service the `moderation` plugin asks before a model sees a request's input: any server of OpenAI's moderations API (its `/moderations` is called), e.g. https://api.openai.com/v1. Unset: the plugin is refused (400). The operator's own address: private addresses are allowed.",
      ),
    MODERATION_API_KEY: z.string().min(1).optional().describe("The moderation service's key (sent as a Bearer token)."),
    MODERATION_MODEL: z
      .string()
      .min(1)
      .default('omni-moderation-latest')
      .describe('The moderation model asked (`model` of the moderations API).'),
    MODERATION_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(10_000)
      .describe(
        'Time limit of one moderation check; a service that does not answer in time refuses the request (502).',
      ),
    WEB_SEARCH_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(10_000)
      .describe('Time limit of one search by `openrouter:web_search`.'),
    STREAM_KEEPALIVE_MS: z.coerce
      .number()
      .int()
      .min(10)
      .max(600_000)
      .default(10_000)
      .describe(
        'An open stream waiting on a server tool gets an SSE comment this often (for idle timeouts on the way).',
      ),
    INTERN_CACHE_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(1_000)
      .describe('Longest a polled intern or list page is reused; change events evict sooner (0: off).'),
    RUNTIME_TOKEN: runtimeToken
      .optional()
      .describe(
        "The fleet's credential (at least 32 characters, compared in constant time): runtime hosts present it to join, and are then given a credential of their own (derived from the master key, per host and epoch). `npm start` makes one per run.",
      ),
    CHAT_REQUEST_BUDGET_MS: ms
      .default(300_000)
      .describe('Longest one chat request streams; then it ends with a `timeout` finish error (the session goes on).'),
    SHUTDOWN_GRACE_MS: ms
      .default(8_000)
      .describe(
        'On SIGTERM or SIGINT, how long the chat turns this process relays may still run; then each ends with a `stream_severed` finish error (retryable: send the prompt again in the same session), intern event streams end at once, and the process exits at the latest 2 s later.',
      ),
    RUNTIME_ANSWER_TIMEOUT_MS: ms
      .default(30_000)
      .describe(
        'How long the chat route waits for the runtime host to take a prompt or an answer (then `504 timeout`, before any stream).',
      ),
    CHAT_MOVE_WAIT_MS: ms
      .default(45_000)
      .describe(
        'A chat for an intern the fleet is moving (its host died or drains) waits this long for it to run on its new host, then goes there; 0: answer `409 intern_not_ready` / `502` at once.',
      ),
    CHAT_TURNS_PER_MINUTE: z.coerce
      .number()
      .int()
      .min(0)
      .default(600)
      .describe(
        "Chat turns (prompts and answers) one user, or one organization key's account, may start per minute (a one-minute window in Redis, shared by all API processes); past it `429 rate_limited` with `Retry-After`. 0: no limit.",
      ),
    INTERN_PROVIDE_INPUT_NAME: z
      .enum(['service.provide_input', 'openrouter.provide_input'])
      .default('service.provide_input')
      .describe(
        "The name of the tool call a paused intern run streams: the API description's `service.provide_input`, or `openrouter.provide_input`, the only one `@openrouter/sdk`'s `client.interns.chat` accepts. Replies may name either.",
      ),
    ...listenerSettings,
    ...fairUseSettings,
    ...fleetSettings,
    ...backgroundTurnSettings,
    SCHEDULE_SECONDS: z
      .enum(['refuse', 'allow'])
      .default('refuse')
      .describe(
        "Schedules' cron expressions with a seconds field (six fields) are refused unless `allow` (tests, demonstrations): a schedule is a standing job, not a loop.",
      ),
    WEBHOOK_BODY_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1_024)
      .max(24_000)
      .default(16_384)
      .describe(
        "The largest webhook delivery's body a trigger takes (it goes into the turn's prompt, as data); past it `413 payload_too_large`.",
      ),
    WEBHOOK_DELIVERIES_PER_MINUTE: z.coerce
      .number()
      .int()
      .min(1)
      .default(60)
      .describe(
        'Deliveries one trigger takes per minute (a one-minute window in Redis, shared by all API processes); past it `429 rate_limited` with `Retry-After`.',
      ),
    EGRESS_PRIVATE_NETWORKS: z
      .enum(['refuse', 'allow'])
      .default('refuse')
      .describe(
        "Interns' HTTP requests that carry secrets are made by the API's egress: private and loopback addresses are refused unless `allow`.",
      ),
    EGRESS_HOSTS: egressHosts.describe(
      'Fixed answers for names (`name=address,…`) instead of DNS: tests map their hostnames to the loopback.',
    ),
    SNAPSHOT_STORE: z
      .enum(['postgres', 's3'])
      .default('postgres')
      .describe("Where snapshots of interns' workspaces are kept: `postgres` or `s3`."),
    SNAPSHOT_MAX_MB: snapshotMb.describe(
      'The largest workspace snapshot accepted, compressed, in MiB (larger ones are refused with `413 snapshot_too_large`).',
    ),
    SNAPSHOT_S3_BUCKET: z
      .string()
      .min(1)
      .optional()
      .describe('The bucket of the S3-compatible snapshot store (required with `SNAPSHOT_STORE=s3`).'),
    SNAPSHOT_S3_ENDPOINT: z.url().optional().describe('Its endpoint (MinIO, Ceph, R2…); unset: AWS.'),
    SNAPSHOT_S3_REGION: z.string().min(1).default('us-east-1').describe('Its region.'),
    SNAPSHOT_S3_FORCE_PATH_STYLE: flag
      .default(false)
      .describe('Path-style addressing (most S3-compatible stores want it).'),
    SNAPSHOT_S3_ACCESS_KEY_ID: z
      .string()
      .min(1)
      .optional()
      .describe("Its access key id; unset: the AWS SDK's default credential chain."),
    SNAPSHOT_S3_SECRET_ACCESS_KEY: z
      .string()
      .min(1)
      .optional()
      .describe("Its secret access key; unset: the AWS SDK's default credential chain."),
  })
  .refine((c) => !c.OIDC_ISSUER || c.OIDC_CLIENT_ID, {
    message: 'OIDC_ISSUER needs OIDC_CLIENT_ID',
    path: ['OIDC_CLIENT_ID'],
  })
  .refine((c) => !c.OIDC_ISSUER || c.OIDC_ALLOW_HTTP || c.OIDC_ISSUER.startsWith('https://'), {
    message: 'OIDC_ISSUER must be https:// (OIDC_ALLOW_HTTP=true allows http:// for development)',
    path: ['OIDC_ISSUER'],
  })
  .refine((c) => c.SNAPSHOT_STORE !== 's3' || c.SNAPSHOT_S3_BUCKET, {
    message: 'SNAPSHOT_STORE=s3 needs SNAPSHOT_S3_BUCKET',
    path: ['SNAPSHOT_S3_BUCKET'],
  })
export type ApiConfig = z.infer<typeof ApiConfig>
