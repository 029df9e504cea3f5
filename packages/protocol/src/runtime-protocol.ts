import { z } from 'zod'

// The protocol between the API, the workers and the runtime hosts, one schema per message: what
// each side sends is written from these types and what it receives is parsed with them, so neither
// side reads the other by its text. Paths: the host's control API under /v1/interns, the API's
// fleet API (for hosts) under /internal/v1.

/** An intern id as every side writes it. */
export const InternId = z.uuid()

/** What a host runs an intern as (PUT /v1/interns/:id). The key lives in the host's memory only. */
export const InternSpec = z.object({
  hostname: z.string().min(1).max(253),
  name: z.string().min(1).max(128),
  instructions: z.string().max(100_000).nullable(),
  model: z.string().max(256).nullable(),
  /** The intern's own API key (its model calls are made as the intern). */
  token: z.string().min(1).max(512),
  /** The placement this configuration belongs to (the intern's provision generation when it was placed). */
  generation: z.int().min(0),
  /**
   * The digest of the intern's latest workspace snapshot, which the host restores before it runs
   * the intern; null: it has none (a new intern), so the host asks for none. Absent: ask.
   */
  snapshot: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable()
    .optional(),
})
export type InternSpec = z.infer<typeof InternSpec>

/** The most bytes a file put into an intern's workspace holds (PUT /v1/interns/:id/files). */
export const WORKSPACE_FILE_MAX_BYTES = 16 * 1024 * 1024

/**
 * A file put into an intern's workspace from outside its turns (a file a person shared in Slack):
 * its path in the workspace's view (`/workspace/…` or relative to it) and its bytes, as base64.
 */
export const WorkspaceFilePut = z.strictObject({
  path: z.string().min(1).max(1024),
  content_base64: z.base64().max(Math.ceil(WORKSPACE_FILE_MAX_BYTES / 3) * 4),
})
export type WorkspaceFilePut = z.infer<typeof WorkspaceFilePut>

export const Approval = z.enum(['self-drive', 'manual'])
/** `manual`: every command and request asks first; `self-drive`: nothing asks. */
export type ApprovalMode = z.infer<typeof Approval>

/** A prompt for an intern, or the answer to what its paused run asked (POST /v1/interns/:id/chat). */
export const ChatRequest = z.union([
  z.object({
    session_id: z.string().min(1).max(256),
    reply: z.object({ interaction_id: z.string().min(1).max(128), content: z.string().max(64_000) }),
  }),
  z.object({
    session_id: z.string().min(1).max(256).optional(),
    message: z.string().min(1).max(32_000),
    approval_mode: Approval.optional(),
    /**
     * A turn no person waits on (a schedule's, a webhook's), by its id: it runs on when its stream
     * goes (the worker that holds it may die), and the same id again attaches to it rather than
     * starting it twice.
     */
    turn_id: z.uuid().optional(),
    /** A subagent's turn: run with this model (else the intern's), stopped once it has spent budget_usd, and given no subagents of its own. */
    subagent: z
      .strictObject({
        model: z.string().min(1).max(256).optional(),
        budget_usd: z.number().positive().max(1_000).optional(),
      })
      .optional(),
  }),
  /** Attach to the turn `attach` (started with that turn_id): the rest of its events, or how it ended. */
  z.strictObject({ attach: z.uuid() }),
])
export type ChatRequest = z.infer<typeof ChatRequest>

export const TurnUsage = z.object({
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  total_tokens: z.number(),
  cost: z.number(),
})
export type TurnUsage = z.infer<typeof TurnUsage>

/** The events of a run, as the host streams them (one Server-Sent Event each). */
export const RunEvent = z.discriminatedUnion('type', [
  /** The run's stream opens: its session and (hosts since issue 44) the model the intern calls. */
  z.object({ type: z.literal('session'), session_id: z.string(), model: z.string().optional() }),
  z.object({ type: z.literal('text'), delta: z.string(), model: z.string() }),
  z.object({ type: z.literal('reasoning'), delta: z.string(), model: z.string() }),
  z.object({ type: z.literal('tool'), name: z.string(), arguments: z.string(), output: z.string() }),
  z.object({ type: z.literal('pause'), interaction_id: z.string(), arguments: z.string() }),
  z.object({ type: z.literal('done'), usage: TurnUsage }),
  z.object({ type: z.literal('error'), message: z.string(), retryable: z.boolean() }),
  /** The host ended the run (suspended, moved, a question's deadline passed) while a client listened. */
  z.object({ type: z.literal('ended'), message: z.string() }),
])
export type RunEvent = z.infer<typeof RunEvent>

/**
 * The host's refusals, by code: each with the status it answers. The API maps them onto its own
 * reasons by code, never by the message's text.
 */
export const HOST_ERRORS = {
  bad_request: 400,
  bad_answer: 400,
  unauthorized: 401,
  not_found: 404,
  interaction_unknown: 404,
  intern_not_ready: 409,
  busy: 409,
  interaction_not_pending: 409,
  /** No turn of that id runs here, nor ended here lately (the host restarted, or it never started). */
  turn_unknown: 404,
  /** The turn's events already go to another caller (a person answered its question and follows it). */
  turn_attached: 409,
  /** The call names a placement this host no longer holds (the intern was placed again elsewhere). */
  placement_stale: 409,
  /** The host has not heard from the fleet's record lately (it may have been cut off): it answers for no intern until it has. */
  placement_unverified: 503,
  /** Too many paused runs (a busy of its own status). */
  busy_paused: 503,
  draining: 503,
  /** Commands cannot be sandboxed on this host (no bubblewrap), and unconfined ones are not allowed. */
  sandbox_unavailable: 503,
  /** A gateway sandbox's network policy is fixed when it is made: a command asking another is refused. */
  sandbox_policy_conflict: 409,
} as const
export type HostErrorCode = keyof typeof HOST_ERRORS
export const HostErrorBody = z.object({
  error: z.enum(Object.keys(HOST_ERRORS) as [HostErrorCode, ...HostErrorCode[]]),
  message: z.string(),
})
export type HostErrorBody = z.infer<typeof HostErrorBody>
/** A refusal's body and status. */
export const hostError = (error: HostErrorCode, message: string): { status: number; body: HostErrorBody } => ({
  status: HOST_ERRORS[error],
  body: { error, message },
})

/** POST /v1/interns/:id/chat answered 202: the prompt went into the session's running turn. */
export const Steered = z.object({ session_id: z.string(), status: z.literal('steered') })

/** What a host says of an intern it has (GET /v1/interns, /v1/interns/:id). */
export const HostedIntern = z.object({
  id: InternId,
  hostname: z.string(),
  generation: z.int(),
  running: z.boolean(),
  starts: z.int(),
  configWrites: z.int(),
  startedAt: z.string().nullable(),
})
export type HostedIntern = z.infer<typeof HostedIntern>

// The fleet: hosts join the record and keep a heartbeat.

export const HostId = z
  .string()
  .regex(
    /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/,
    'a host id is a DNS label-like name (lowercase letters, digits, dots and hyphens)',
  )
export const JoinRequest = z.object({
  id: HostId,
  address: z.url().refine((u) => /^https?:\/\//.test(u), 'an http:// or https:// URL'),
  capacity: z.int().min(1).max(100_000),
})
export type JoinRequest = z.infer<typeof JoinRequest>
export const JoinResponse = z.object({
  /** The host's credential for this epoch: it presents it to the API, and requires it of whoever calls it. */
  token: z.string(),
  epoch: z.int(),
  /** How long an acknowledged heartbeat lets the host answer for its interns; past it, nothing until the next. */
  lease_ms: z.int(),
  heartbeat_ms: z.int(),
  /** The model of an intern whose `model` is null, as the API decides it (null: it serves none). */
  intern_default_model: z.string().nullable().optional(),
  /** Whether the API searches the web for `openrouter:web_search` (a search engine is configured): interns are then offered it. */
  intern_web_search: z.boolean().optional(),
})
export type JoinResponse = z.infer<typeof JoinResponse>

export const Placement = z.object({ id: InternId, generation: z.int() })
export type Placement = z.infer<typeof Placement>
export const HeartbeatRequest = z.object({
  /** The interns it runs now, each with the placement it runs under. */
  running: z.array(Placement).max(100_000),
  /** Draining: its turns have ended and its workspaces are snapshotted. */
  drained: z.boolean().optional(),
})
export type HeartbeatRequest = z.infer<typeof HeartbeatRequest>
export const HeartbeatResponse = z.object({
  state: z.enum(['live', 'draining', 'dead']),
  /** The interns the record places on this host, each with its placement: the host runs these and no others. */
  placements: z.array(Placement),
})
export type HeartbeatResponse = z.infer<typeof HeartbeatResponse>

/** Appends to an intern's durable session (POST /internal/v1/interns/:id/sessions/:session/entries). */
export const SessionAppend = z.object({
  generation: z.int(),
  /** The sequence number of the first item (the session's length when they were appended): a retry appends nothing twice. */
  from: z.int().min(0),
  items: z.array(z.record(z.string(), z.unknown())).min(1).max(1_000),
})
export type SessionAppend = z.infer<typeof SessionAppend>
export const SessionItems = z.object({ items: z.array(z.record(z.string(), z.unknown())) })
/** The sessions an intern has in the record (GET /internal/v1/interns/:id/sessions): a host asks once per placement. */
export const SessionIds = z.object({ sessions: z.array(z.string()) })

/** How an intern writes a secret it means, in a header or a body: `{{secret:NAME}}`. */
export const SECRET_PLACEHOLDER = /\{\{secret:([a-z][a-z0-9_]*)\}\}/g

/** An intern's HTTP request through the egress (POST /internal/v1/interns/:id/egress): placeholders filled by the API. */
export const EgressRequest = z.object({
  method: z.string().min(1).max(16),
  url: z.string().min(1).max(8_192),
  headers: z.record(z.string(), z.string()).optional(),
  body: z
    .string()
    .max(8 * 1024 * 1024)
    .optional(),
  /** The most of the answer to read (an MCP server's answers may be larger than a page's); the egress's own cap otherwise. */
  max_bytes: z
    .int()
    .min(1)
    .max(8 * 1024 * 1024)
    .optional(),
})
export type EgressRequest = z.infer<typeof EgressRequest>
export const EgressResult = z.union([
  z.object({ status: z.int(), headers: z.record(z.string(), z.string()), body: z.string(), truncated: z.boolean() }),
  z.object({ error: z.string() }),
])
export type EgressResult = z.infer<typeof EgressResult>
/** What asks for an intern's request with secrets: the API's egress itself, or a host's client of it. */
export interface SecretEgress {
  send(
    internId: string,
    args: Omit<EgressRequest, 'method'> & { method?: string },
    signal?: AbortSignal,
  ): Promise<EgressResult>
}

/** The header a host names itself with, beside its credential. */
export const HOST_ID_HEADER = 'x-roster-host'
/** Headers of a workspace snapshot (PUT /internal/v1/interns/:id/snapshot, its body the gzipped tar). */
export const SNAPSHOT_GENERATION_HEADER = 'x-roster-generation'
export const SNAPSHOT_SHA256_HEADER = 'x-roster-sha256'

/** POST /v1/sandboxes/:key/commands: a command for one of the gateway's sandboxes on a host. */
/** A host a sandbox may reach: a lowercase hostname, or a pattern where `*` stands for any run of characters. */
export const AllowedHost = z
  .string()
  .regex(/^[a-z0-9*](?:[a-z0-9*.-]{0,251}[a-z0-9*])?$/, 'a lowercase hostname, or a pattern with *')
export const SandboxCommand = z.strictObject({
  command: z.string().min(1).max(100_000),
  timeout_ms: z.int().min(100).max(600_000).optional(),
  /** The sandbox's network: these hosts only (absent: none). Fixed when the sandbox is made. */
  network: z.strictObject({ allowed_domains: z.array(AllowedHost).min(1).max(50) }).optional(),
})
export type SandboxCommand = z.infer<typeof SandboxCommand>
/** …and what it came to. */
export const SandboxCommandResult = z.object({
  exit_code: z.int().nullable(),
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  truncated: z.boolean(),
  timed_out: z.boolean(),
  duration_ms: z.number(),
  limit: z.enum(['processes', 'memory', 'workspace']).optional(),
})
export type SandboxCommandResult = z.infer<typeof SandboxCommandResult>

/** GET /internal/v1/interns/:id/mcp-servers: the intern's enabled MCP servers, as its host connects to them. */
export const HostMcpServers = z.object({
  servers: z.array(
    z.object({
      id: z.uuid(),
      name: z.string(),
      url: z.string(),
      headers: z.record(z.string(), z.string()),
    }),
  ),
})
export type HostMcpServers = z.infer<typeof HostMcpServers>

/** POST /internal/v1/interns/:id/mcp-servers/:server/tools: what the host found there (shown on the intern's page). */
export const McpToolsSeen = z.strictObject({
  generation: z.int().min(0),
  tools: z
    .array(z.object({ name: z.string().max(256), model_name: z.string().max(64), description: z.string().max(2_048) }))
    .max(500),
  error: z.string().max(4_000).nullable(),
})
export type McpToolsSeen = z.infer<typeof McpToolsSeen>

/** PUT /v1/interns/:id/skills/:name: a skill's folder, its files at once (SKILL.md among them). */
export const SkillInstall = z.strictObject({
  files: z
    .array(
      z.strictObject({
        path: z.string().min(1).max(512),
        content_base64: z.base64().max(Math.ceil((8 * 1024 * 1024) / 3) * 4),
      }),
    )
    .min(1)
    .max(100),
})
export type SkillInstall = z.infer<typeof SkillInstall>

/** An intern's skills as its host finds them (GET /v1/interns/:id/skills), and its folders that are not skills. */
export const SkillsFound = z.object({
  skills: z.array(z.object({ name: z.string(), description: z.string() })),
  problems: z.array(z.object({ folder: z.string(), problem: z.string() })),
})
export type SkillsFound = z.infer<typeof SkillsFound>

/** POST /internal/v1/interns/:id/subagents: the intern's turn starts a subagent (a turn of its own, queued). */
export const StartSubagent = z.strictObject({
  generation: z.int().min(0),
  /** The session of the turn that starts it: told there when it ends. */
  session_id: z.string().min(1).max(256),
  prompt: z.string().min(1).max(32_000),
  model: z.string().min(1).max(256).optional(),
  budget_usd: z.number().positive().max(1_000).optional(),
  approval_mode: Approval,
})
export type StartSubagent = z.infer<typeof StartSubagent>
export const SubagentStarted = z.object({ turn_id: z.uuid(), session_id: z.string() })
export type SubagentStarted = z.infer<typeof SubagentStarted>
