import { z } from 'zod'
import { flag, port, ms, runtimeToken, logLevel, metricsSettings, egressHosts, snapshotMb } from './values.js'
import { listenerSettings } from '../listener-settings.js'

// A runtime host's settings (apps/runtime).

export const RuntimeConfig = z.object({
  ...listenerSettings,
  HOST: z.string().min(1).default('127.0.0.1').describe('Where the runtime host listens.'),
  PORT: port.default(3100).describe("The runtime host's port."),
  RUNTIME_DATA_DIR: z
    .string()
    .min(1)
    .default('.roster/runtime')
    .describe(
      "The host's cache of its interns' workspaces and sessions (the record and the snapshot store are the truth; a new placement starts from them).",
    ),
  RUNTIME_TOKEN: runtimeToken.describe(
    "The fleet's credential, to join it; once joined, the host's own credential (given by the API) is required of every call to its control API, and any other caller gets 401.",
  ),
  RUNTIME_HOST_ID: z
    .string()
    .regex(/^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/, 'must be a lowercase DNS label-like name')
    .optional()
    .describe("This host's stable id in the fleet (a StatefulSet pod's name); default `runtime-<PORT>`."),
  RUNTIME_ADVERTISE_URL: z
    .url()
    .optional()
    .describe('The base URL the API and the workers reach this host on; default `http://HOST:PORT`.'),
  RUNTIME_CAPACITY: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .optional()
    .describe(
      "Interns this host runs at most (placement fills the least loaded host with room); default one per 128 MiB of the machine's memory.",
    ),
  RUNTIME_DRAIN_ON_SHUTDOWN: flag
    .default(false)
    .describe(
      'On SIGTERM, drain before exiting: its interns move to other hosts, their turns ended and workspaces snapshotted.',
    ),
  RUNTIME_DRAIN_TURN_GRACE_MS: ms
    .default(30_000)
    .describe('How long a draining host lets running turns finish before it ends them.'),
  RUNTIME_SNAPSHOT_MAX_MB: snapshotMb.describe(
    'The largest workspace snapshot this host takes (compressed), in MiB; the API holds its own ceiling (`SNAPSHOT_MAX_MB`).',
  ),
  RUNTIME_UNCONFINED_COMMANDS: z
    .enum(['refuse', 'allow'])
    .default('refuse')
    .describe(
      "Where bubblewrap cannot work, `refuse` refuses interns' shell commands (saying why, and at start-up); `allow` runs them unconfined, for a development machine only.",
    ),
  ROSTER_API_URL: z
    .string()
    .url()
    .default('http://127.0.0.1:3000/api/v1')
    .describe("Roster's API, which interns call for their model turns (as themselves); `npm start` sets its own."),
  INTERN_DEFAULT_MODEL: z
    .string()
    .min(1)
    .optional()
    .describe(
      "The model of an intern whose `model` is null, on this host. Unset: the API's (told as the host joins the fleet).",
    ),
  COMMAND_TIMEOUT_MS: ms.default(120_000).describe('Longest one shell command of an intern may run.'),
  GATEWAY_SANDBOX_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(256)
    .default(4)
    .describe(
      "Commands of the gateway's sandboxes (`openrouter:bash` run with engine `openrouter`) this host runs at once; past it a command is refused as busy.",
    ),
  GATEWAY_SANDBOX_IDLE_MS: ms
    .default(30 * 60_000)
    .describe(
      "How long a session's gateway sandbox (its files) is kept unused before it is discarded; a request's goes when the request ends.",
    ),
  GATEWAY_SANDBOX_EGRESS_PORTS: z
    .string()
    .regex(/^\d{1,5}(,\d{1,5})*$/, 'ports, comma-separated')
    .default('80,443')
    .transform((s) => s.split(',').map(Number))
    .describe(
      "The ports a gateway sandbox whose `network_policy` allows hosts may reach them on (through the host's egress proxy).",
    ),
  RUN_MAX_STEPS: z.coerce
    .number()
    .int()
    .min(1)
    .max(200)
    .default(30)
    .describe('Model turns at most in one run (tool calls between them).'),
  SANDBOX_PROCESSES: z.coerce
    .number()
    .int()
    .min(8)
    .max(100_000)
    .default(256)
    .describe('Processes (and threads) one command may have at once.'),
  SANDBOX_MEMORY_MB: z.coerce
    .number()
    .int()
    .min(16)
    .default(1024)
    .describe(
      "Memory of one command's processes together (a control group; per process where none can be made), in MiB.",
    ),
  SANDBOX_CPU_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(300)
    .describe('CPU seconds each process of a command may use.'),
  SANDBOX_CPU_PERCENT: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(100)
    .describe("A command's share of one core, in percent (a control group)."),
  SANDBOX_FILE_MB: z.coerce.number().int().min(1).default(1024).describe('Largest file a command may write, in MiB.'),
  SANDBOX_TMP_MB: z.coerce
    .number()
    .int()
    .min(1)
    .default(256)
    .describe("Size of a command's own `/tmp` (in memory), in MiB."),
  SANDBOX_WORKSPACE_MB: z.coerce
    .number()
    .int()
    .min(1)
    .default(4096)
    .describe("An intern's workspace size past which a command that grows it is killed, in MiB."),
  SANDBOX_UID: z.coerce
    .number()
    .int()
    .min(1)
    .max(4_294_967_294)
    .default(64_000)
    .describe("The user (and group) id commands run as when the host runs as root: unprivileged, and no one else's."),
  RUNTIME_EGRESS_FORWARDER: z
    .enum(['auto', 'socat', 'node'])
    .default('auto')
    .describe(
      "What forwards a sandboxed command's network to its egress proxy: `socat` (starts in ~12 ms), `node` (the runtime's own binary, always there, ~10× slower to start), `auto` (socat where installed).",
    ),
  INTERACTION_DEADLINE_MS: ms
    .default(300_000)
    .describe(
      'How long a run paused on a question (a permission, an elicitation) waits for the answer; then it is cancelled.',
    ),
  INTERN_WEB_SEARCH: z
    .enum(['auto', 'off'])
    .default('auto')
    .describe(
      "`auto`: interns are offered web search (the gateway's `openrouter:web_search`) when the API has a search engine configured; `off`: never.",
    ),
  MCP_TOOL_TIMEOUT_MS: ms
    .default(60_000)
    .describe(
      "How long an intern's call of an MCP server's tool may take before it is given up (the model is told so), and how long connecting to a server and listing its tools may take at a turn's start.",
    ),
  MCP_SESSION_IDLE_MS: ms
    .default(5 * 60_000)
    .describe(
      "How long an intern's session with an MCP server is kept with nothing asked of it; then it is ended (a DELETE, as the protocol asks) and the next use begins a new one. An intern leaving its host ends its sessions too (where the egress still serves it: a draining host, a deletion; a suspended or moved intern's are only dropped here, and the server lets them expire).",
    ),
  MCP_RESPONSE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(8 * 1024 * 1024)
    .default(2 * 1024 * 1024)
    .describe(
      "The largest answer of an MCP server that is read; a larger one is not (the call fails, saying so). What the model is given of a tool's result is cut at 64 KiB.",
    ),
  RUN_MAX_PAUSED: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(16)
    .describe('Runs one intern may hold paused on questions at once; past it a new prompt gets `503 busy`.'),
  INTERN_SUBAGENTS_AT_ONCE: z.coerce
    .number()
    .int()
    .min(1)
    .max(16)
    .default(2)
    .describe(
      "Subagents' turns one intern runs at once, alongside its own turn (they share its workspace and its host's share of CPU); more wait, queued, for one to end.",
    ),
  DATABASE_URL: z
    .undefined({
      error:
        'a runtime host must not hold a database credential: it reaches the fleet through ROSTER_API_URL; unset it',
    })
    .optional()
    .describe(
      "Must not be set on a runtime host: the hosts run interns' code, so they hold no database credential (it stops the host at start-up).",
    ),
  VAULT_MASTER_KEY: z
    .undefined({ error: 'a runtime host must not hold the master key: secrets are released by the API tier; unset it' })
    .optional()
    .describe(
      'Must not be set on a runtime host: secrets are released by the API tier (it stops the host at start-up).',
    ),
  EGRESS_PRIVATE_NETWORKS: z
    .enum(['refuse', 'allow'])
    .default('refuse')
    .describe("A sandboxed command's egress proxy on the host refuses private and loopback addresses unless `allow`."),
  EGRESS_HOSTS: egressHosts.describe(
    'Fixed answers for names (`name=address,…`) instead of DNS: tests map their hostnames to the loopback.',
  ),
  LOG_LEVEL: logLevel.describe("pino's level; logs are JSON lines with request ids, credentials redacted."),
  ...metricsSettings,
})
export type RuntimeConfig = z.infer<typeof RuntimeConfig>
