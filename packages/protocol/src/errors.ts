// Every error Roster answers, in one table of one row shape, in three sections by the wire that
// names the code (the lifecycle's reasons, intern chat's finish reasons, the gateway's canonical
// types): each code with its HTTP status, whether retrying may help, and the spec's canonical error
// type it is classified as; and one renderer per wire format
// that carries errors (the lifecycle envelope, the gateway's, the Anthropic client's, Open
// Responses' error events, intern chat's finish error, the vault's). Domain code throws AppError
// (or the gateway's GatewayError) with a code; only the renderers shape bodies. This module has no
// dependencies, so the gateway reads it too (`@roster/shared/errors`).

/** The spec's canonical error types (the Response object's error enum): how every failure is classified. */
export type ErrorType =
  | 'invalid_request'
  | 'context_length_exceeded'
  | 'authentication'
  | 'payment_required'
  | 'permission_denied'
  | 'not_found'
  | 'precondition_failed'
  | 'payload_too_large'
  | 'rate_limit_exceeded'
  | 'unmapped'
  | 'server'
  | 'provider_unavailable'
  | 'provider_overloaded'
  | 'timeout'

interface ErrorRow {
  status: number
  retryable: boolean
  type: ErrorType
}

/**
 * The intern, vault and preset operations' errors: the code is the body's `metadata.reason` (the
 * spec's tables; "ours" marks reasons it leaves unnamed).
 */
export const Reasons = {
  invalid_body: { status: 400, retryable: false, type: 'invalid_request' },
  /** 401 carries no metadata (the spec's row: reason none, retryable none). */
  unauthorized: { status: 401, retryable: false, type: 'authentication' },
  no_acting_user: { status: 403, retryable: false, type: 'permission_denied' },
  workspace_capability_unavailable: { status: 403, retryable: false, type: 'permission_denied' },
  not_found: { status: 404, retryable: false, type: 'not_found' },
  /** A request that did not arrive, or finish, in time (the gateway's provider timeouts answer 504). */
  timeout: { status: 408, retryable: true, type: 'timeout' },
  idempotency_key_reused: { status: 409, retryable: false, type: 'precondition_failed' },
  name_taken: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: the member already owns INTERN_LIMIT_PER_MEMBER interns. */
  intern_limit_reached: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: vault_id names no vault owned by another intern of this workspace. */
  vault_not_attachable: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: the operation is not allowed in the intern's current status (the message says which). */
  already_running: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: the change would leave the account without an enabled admin. */
  last_admin: { status: 409, retryable: false, type: 'precondition_failed' },
  already_provisioning: { status: 409, retryable: false, type: 'precondition_failed' },
  already_stopped: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: a Slack-linked intern is provisioned once its Slack app is installed (the message names the install URL). */
  slack_install_pending: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: a Slack link without `slack.app` needs the workspace's app configuration token, which no operator stored. */
  slack_not_configured: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: a schedule or trigger names a Slack conversation, but the intern has no Slack app. */
  slack_not_linked: { status: 409, retryable: false, type: 'precondition_failed' },
  intern_deleting: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: deleting a destroy_failed intern whose workspace archive failed needs acknowledge_workspace_loss. */
  workspace_loss_unacknowledged: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: only a live runtime host can be drained (the message says what the host is). */
  host_not_drainable: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: a change made with a web console session but without the console's header or from another origin. */
  cross_site_refused: { status: 403, retryable: false, type: 'permission_denied' },
  /** Ours: preset creation needs a management key. */
  management_key_required: { status: 403, retryable: false, type: 'permission_denied' },
  /** Ours: another create of the same preset held it longer than we wait; retry. */
  preset_conflict: { status: 409, retryable: true, type: 'precondition_failed' },
  /** Chat: the intern is not running (or was provisioned before chat existed). */
  intern_not_ready: { status: 409, retryable: true, type: 'precondition_failed' },
  /** Chat: one running turn per intern; try again shortly (503 when it holds as many paused runs as it can). */
  busy: { status: 409, retryable: true, type: 'rate_limit_exceeded' },
  /** Chat: a reply names no interaction of that session. */
  interaction_unknown: { status: 404, retryable: false, type: 'not_found' },
  /** Chat: too many turns for the user (or, for an organization key, the account) the key acts as; see Retry-After. */
  rate_limited: { status: 429, retryable: true, type: 'rate_limit_exceeded' },
  /** Chat: the run that asked has ended, or the question was already answered. */
  interaction_not_pending: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Chat: the intern could not be reached. */
  intern_unreachable: { status: 502, retryable: true, type: 'provider_unavailable' },
  /** Chat: the intern's host refused the request for a reason of its own (not one the route names). */
  intern_rejected: { status: 502, retryable: false, type: 'provider_unavailable' },
  /** Ours (the vault's 409): a copy names a secret bound to no hosts. */
  vault_conflict: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: an account holds as many observability destinations of a type as it may (5). */
  destination_limit_reached: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: an intern holds as many schedules, or webhook triggers, as it may. */
  work_limit_reached: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: a webhook delivery's signature is missing, stale (its timestamp over five minutes away) or wrong. */
  signature_invalid: { status: 401, retryable: false, type: 'authentication' },
  /** Ours: a webhook delivery was sent before (the same signature): it has its turn already. */
  delivery_replayed: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours: the intern has INTERN_TURN_QUEUE turns waiting already; retry when it has worked through them. */
  turn_queue_full: { status: 429, retryable: true, type: 'rate_limit_exceeded' },
  /** Ours: the webhook trigger is switched off (enabled: false). */
  trigger_disabled: { status: 409, retryable: false, type: 'precondition_failed' },
  /** Ours (the vault's 503): the operator has switched vault writes off for the account. */
  vault_writes_disabled: { status: 503, retryable: true, type: 'provider_unavailable' },
  payload_too_large: { status: 413, retryable: false, type: 'payload_too_large' },
  unsupported_media_type: { status: 415, retryable: false, type: 'invalid_request' },
  internal_error: { status: 500, retryable: true, type: 'server' },
  configuration_error: { status: 500, retryable: false, type: 'server' },
  upstream_unavailable: { status: 502, retryable: true, type: 'provider_unavailable' },
  /** Ours: this process holds as much of something as it can (request bodies in flight, WebSocket connections); retry shortly (Retry-After). */
  overloaded: { status: 503, retryable: true, type: 'server' },
} as const satisfies Record<string, ErrorRow>

/** How an intern chat stream's turn ended in error, after the response headers (its finish error's `reason`). */
export const ChatFinishReasons = {
  /** The turn outlived the chat request (CHAT_REQUEST_BUDGET_MS); the session goes on. */
  timeout: { status: 504, retryable: true, type: 'timeout' },
  /** The run was ended (suspended, moved, past a question's deadline) before it answered. */
  run_ended: { status: 410, retryable: false, type: 'precondition_failed' },
  /** The intern's model call or tool loop failed (its retryable says whether to send the prompt again). */
  turn_failed: { status: 502, retryable: true, type: 'provider_unavailable' },
  /** The link between the API and the intern broke (a host or an API process went away). */
  stream_severed: { status: 502, retryable: true, type: 'provider_unavailable' },
} as const satisfies Record<string, ErrorRow>

/** The gateway's doors: each code is its own canonical type (the body's `metadata.error_type`). */
export const GatewayErrors = {
  invalid_request: { status: 400, retryable: false, type: 'invalid_request' },
  context_length_exceeded: { status: 400, retryable: false, type: 'context_length_exceeded' },
  authentication: { status: 401, retryable: false, type: 'authentication' },
  payment_required: { status: 402, retryable: false, type: 'payment_required' },
  permission_denied: { status: 403, retryable: false, type: 'permission_denied' },
  not_found: { status: 404, retryable: false, type: 'not_found' },
  precondition_failed: { status: 409, retryable: false, type: 'precondition_failed' },
  payload_too_large: { status: 413, retryable: false, type: 'payload_too_large' },
  rate_limit_exceeded: { status: 429, retryable: true, type: 'rate_limit_exceeded' },
  /** The client went away; nobody reads the answer. */
  unmapped: { status: 499, retryable: false, type: 'unmapped' },
  server: { status: 500, retryable: true, type: 'server' },
  provider_unavailable: { status: 502, retryable: true, type: 'provider_unavailable' },
  provider_overloaded: { status: 503, retryable: true, type: 'provider_overloaded' },
  timeout: { status: 504, retryable: true, type: 'timeout' },
} as const satisfies { [T in ErrorType]: ErrorRow & { type: T } }

export type Reason = keyof typeof Reasons
export type ChatFinishReason = keyof typeof ChatFinishReasons

export class AppError extends Error {
  readonly status: number
  readonly retryable: boolean
  /** Seconds the caller should wait before trying again (sent as Retry-After). */
  readonly retryAfter?: number
  constructor(
    readonly reason: Reason,
    message: string,
    /** `status`: where a reason has two (busy: 409 for a running turn, 503 for too many paused runs). */
    options?: { cause?: unknown; status?: number; retryAfter?: number },
  ) {
    super(message, options)
    this.name = 'AppError'
    this.status = options?.status ?? Reasons[reason].status
    this.retryable = Reasons[reason].retryable
    this.retryAfter = options?.retryAfter
  }

  /** The spec's canonical error type of its reason (what the gateway's doors name it). */
  get errorType(): ErrorType {
    return Reasons[this.reason].type
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError
}

/** The canonical type of a failure known only by its HTTP status (the HTTP layer's, or a provider's). */
export function errorTypeOfStatus(status: number): ErrorType {
  if (status === 429) return 'rate_limit_exceeded'
  if (status === 504 || status === 408) return 'timeout'
  if (status === 503 || status === 529) return 'provider_overloaded'
  for (const row of Object.values(GatewayErrors)) if (row.status === status) return row.type
  return status < 500 ? 'invalid_request' : 'server'
}

const isErrorType = (type: string | undefined): type is ErrorType => !!type && Object.hasOwn(GatewayErrors, type)

/**
 * Whether trying again may help, as one of our error bodies says it (a client of the API reading
 * its answer): the body's own `metadata.retryable` (a reason's row), else its canonical type's
 * (`metadata.error_type`), else its status's.
 */
export function retryableAnswer(status: number, metadata?: { retryable?: unknown; error_type?: unknown }): boolean {
  if (typeof metadata?.retryable === 'boolean') return metadata.retryable
  const type = typeof metadata?.error_type === 'string' ? metadata.error_type : undefined
  return GatewayErrors[isErrorType(type) ? type : errorTypeOfStatus(status)].retryable
}

// ——— The renderers, one per wire format ———

/** The lifecycle envelope (InternLifecycleError): `metadata.reason` and `retryable`; 401 has no metadata, as the spec's table says. */
export function errorBody(reason: Reason, message: string, status: number = Reasons[reason].status) {
  const { retryable } = Reasons[reason]
  if (reason === 'unauthorized') return { error: { code: status, message } }
  return { error: { code: status, message, metadata: { reason, retryable } } }
}

/** The gateway's envelope (responses, chat completions): the canonical type in `metadata.error_type`. */
export const gatewayErrorBody = (
  type: ErrorType,
  message: string,
  status: number = GatewayErrors[type].status,
  /** What the failure documents beside its type (a moderation refusal's `reasons`, `flagged_input`…). */
  more?: Record<string, unknown>,
) => ({
  error: { code: status, message, metadata: { ...more, error_type: type } },
})

/** A failed Response object's `error`: its `code` is the canonical type, named in `metadata.error_type` too. */
export const responseObjectError = (type: ErrorType, message: string) => ({
  code: type,
  message,
  metadata: { error_type: type },
})

/** Open Responses' error `type` (its spec's Errors table) for a canonical type (or, failing that, for the status). */
export function openResponsesErrorType(type: string | undefined, status = 500): string {
  const known = isErrorType(type) ? type : errorTypeOfStatus(status)
  return OPEN_RESPONSES_TYPES[known]
}
const OPEN_RESPONSES_TYPES: Record<ErrorType, string> = {
  invalid_request: 'invalid_request',
  context_length_exceeded: 'invalid_request',
  authentication: 'invalid_request',
  payment_required: 'invalid_request',
  permission_denied: 'invalid_request',
  not_found: 'not_found',
  precondition_failed: 'invalid_request',
  payload_too_large: 'invalid_request',
  rate_limit_exceeded: 'too_many_requests',
  unmapped: 'invalid_request',
  server: 'server_error',
  provider_unavailable: 'server_error',
  provider_overloaded: 'server_error',
  timeout: 'server_error',
}

/** An Open Responses error (its streaming `error` event's and its WebSocket error event's `error`). */
export function openResponsesError<P extends string | null = null>(
  type: ErrorType,
  status: number,
  message: string,
  param?: P,
) {
  return { type: openResponsesErrorType(type, status), code: type, message, param: (param ?? null) as P }
}

/**
 * Open Responses' WebSocket error event (the schema's WebSocketErrorEvent): its `code` is a
 * canonical type, or one of the transport's own (`previous_response_not_found`).
 */
export const webSocketErrorEvent = (status: number, code: string, message: string, param: string | null = null) => ({
  type: 'error',
  status,
  error: { type: openResponsesErrorType(code, status), code, message, param },
})

/** The Anthropic client's error `type` for a canonical type (or, failing that, for the status). */
export function anthropicErrorType(type: string | undefined, status: number): string {
  const known = isErrorType(type) ? type : errorTypeOfStatus(status)
  return ANTHROPIC_TYPES[known]
}
const ANTHROPIC_TYPES: Record<ErrorType, string> = {
  invalid_request: 'invalid_request_error',
  context_length_exceeded: 'invalid_request_error',
  authentication: 'authentication_error',
  payment_required: 'billing_error',
  permission_denied: 'permission_error',
  not_found: 'not_found_error',
  precondition_failed: 'invalid_request_error',
  payload_too_large: 'request_too_large',
  rate_limit_exceeded: 'rate_limit_error',
  unmapped: 'invalid_request_error',
  server: 'api_error',
  provider_unavailable: 'api_error',
  provider_overloaded: 'overloaded_error',
  timeout: 'timeout_error',
}

/** An error as the Anthropic client parses it (the body of an HTTP error, and a stream's `error` event). */
export const anthropicErrorBody = (status: number, message: string, type?: string) => ({
  type: 'error',
  error: { type: anthropicErrorType(type, status), message },
})

/** Intern chat's finish error: the chunk's top-level `error`, as the official client reads it (the contract's §1.4). */
export function chatFinishError(
  reason: ChatFinishReason,
  message: string,
  options: { status?: number; retryable?: boolean } = {},
) {
  const row = ChatFinishReasons[reason]
  return {
    code: options.status ?? row.status,
    message,
    metadata: { reason, retryable: options.retryable ?? row.retryable },
  }
}

/**
 * The vault routes' errors: the standard envelope with the contract's messages and no reason (its
 * §2.6: "the message is the only thing that tells failures apart"); a refusal of the input also
 * says what was wrong.
 */
export function vaultErrorBody(reason: Reason, message: string, status: number = Reasons[reason].status) {
  const said =
    reason === 'invalid_body'
      ? `Invalid vault request: ${message.replace(/^invalid request: /, '')}`
      : reason === 'payload_too_large'
        ? 'Request body too large'
        : reason === 'internal_error'
          ? 'Internal Server Error'
          : message
  return { error: { code: status, message: said } }
}
