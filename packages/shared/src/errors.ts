// The error catalogue, keyed by the spec's metadata.reason. Domain code throws AppError with a
// reason; the API's one error handler turns it into the InternLifecycleError body.

export const Reasons = {
  invalid_body: { status: 400, retryable: false },
  /** 401 carries no metadata (the spec's row: reason none, retryable none). */
  unauthorized: { status: 401, retryable: false },
  no_acting_user: { status: 403, retryable: false },
  workspace_capability_unavailable: { status: 403, retryable: false },
  not_found: { status: 404, retryable: false },
  timeout: { status: 408, retryable: true },
  idempotency_key_reused: { status: 409, retryable: false },
  name_taken: { status: 409, retryable: false },
  /** Ours (the spec leaves it unnamed): the member already owns INTERN_LIMIT_PER_MEMBER interns. */
  intern_limit_reached: { status: 409, retryable: false },
  /** Ours: vault_id names no vault owned by another intern of this workspace. */
  vault_not_attachable: { status: 409, retryable: false },
  /** Ours: the operation is not allowed in the intern's current status (the message says which). */
  already_running: { status: 409, retryable: false },
  already_provisioning: { status: 409, retryable: false },
  already_stopped: { status: 409, retryable: false },
  intern_deleting: { status: 409, retryable: false },
  /** Ours: deleting a destroy_failed intern whose workspace archive failed needs acknowledge_workspace_loss. */
  workspace_loss_unacknowledged: { status: 409, retryable: false },
  /** Ours: preset creation needs a management key. */
  management_key_required: { status: 403, retryable: false },
  /** Ours: another create of the same preset held it longer than we wait; retry. */
  preset_conflict: { status: 409, retryable: true },
  /** Chat: the intern is not running (or was provisioned before chat existed). */
  intern_not_ready: { status: 409, retryable: true },
  /** Chat: one running turn per intern; try again shortly (503 when it holds as many paused runs as it can). */
  busy: { status: 409, retryable: true },
  /** Chat: a reply names no interaction of that session. */
  interaction_unknown: { status: 404, retryable: false },
  /** Chat: too many turns for the user (or, for an organization key, the account) the key acts as; see Retry-After. */
  rate_limited: { status: 429, retryable: true },
  /** Chat: the run that asked has ended, or the question was already answered. */
  interaction_not_pending: { status: 409, retryable: false },
  /** Chat: the intern could not be reached. */
  intern_unreachable: { status: 502, retryable: true },
  /** Chat: the intern's host refused the request for a reason of its own (not one the route names). */
  intern_rejected: { status: 502, retryable: false },
  /** Ours (the vault's 409): a copy names a secret bound to no hosts. */
  vault_conflict: { status: 409, retryable: false },
  /** Ours (the vault's 503): the operator has switched vault writes off for the account. */
  vault_writes_disabled: { status: 503, retryable: true },
  payload_too_large: { status: 413, retryable: false },
  unsupported_media_type: { status: 415, retryable: false },
  internal_error: { status: 500, retryable: true },
  configuration_error: { status: 500, retryable: false },
  upstream_unavailable: { status: 502, retryable: true },
  /** Ours: this process holds as much of something as it can (request bodies in flight, WebSocket connections); retry shortly (Retry-After). */
  overloaded: { status: 503, retryable: true },
} as const satisfies Record<string, { status: number; retryable: boolean }>

export type Reason = keyof typeof Reasons

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
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError
}

/** The InternLifecycleError body. 401 has no metadata, as the spec's table says. */
export function errorBody(reason: Reason, message: string, status: number = Reasons[reason].status) {
  const { retryable } = Reasons[reason]
  if (reason === 'unauthorized') return { error: { code: status, message } }
  return { error: { code: status, message, metadata: { reason, retryable } } }
}
