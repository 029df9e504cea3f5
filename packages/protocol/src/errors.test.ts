import { describe, expect, it } from 'vitest'
import {
  AppError,
  ChatFinishReasons,
  chatFinishError,
  errorBody,
  GatewayErrors,
  gatewayErrorBody,
  Reasons,
  retryableAnswer,
  vaultErrorBody,
  webSocketErrorEvent,
} from './errors.js'
import { InternLifecycleError } from './contracts/interns.js'

// The spec's error tables (intern operations, preset creation), plus the reasons it leaves unnamed (ours).
const spec: Record<string, [number, boolean]> = {
  invalid_body: [400, false],
  unauthorized: [401, false],
  no_acting_user: [403, false],
  workspace_capability_unavailable: [403, false],
  not_found: [404, false],
  timeout: [408, true],
  idempotency_key_reused: [409, false],
  name_taken: [409, false],
  intern_limit_reached: [409, false],
  vault_not_attachable: [409, false],
  already_running: [409, false],
  last_admin: [409, false],
  already_provisioning: [409, false],
  already_stopped: [409, false],
  slack_install_pending: [409, false],
  slack_not_configured: [409, false],
  slack_not_linked: [409, false],
  intern_deleting: [409, false],
  workspace_loss_unacknowledged: [409, false],
  cross_site_refused: [403, false],
  host_not_drainable: [409, false],
  management_key_required: [403, false],
  preset_conflict: [409, true],
  intern_not_ready: [409, true],
  busy: [409, true],
  interaction_unknown: [404, false],
  interaction_not_pending: [409, false],
  rate_limited: [429, true],
  intern_unreachable: [502, true],
  intern_rejected: [502, false],
  vault_conflict: [409, false],
  destination_limit_reached: [409, false],
  work_limit_reached: [409, false],
  signature_invalid: [401, false],
  delivery_replayed: [409, false],
  turn_queue_full: [429, true],
  trigger_disabled: [409, false],
  vault_writes_disabled: [503, true],
  payload_too_large: [413, false],
  unsupported_media_type: [415, false],
  internal_error: [500, true],
  configuration_error: [500, false],
  upstream_unavailable: [502, true],
  overloaded: [503, true],
}

describe('the error catalogue', () => {
  it('matches the spec’s table row for row, with nothing extra', () => {
    expect(Object.keys(Reasons).sort()).toEqual(Object.keys(spec).sort())
    for (const [reason, [status, retryable]] of Object.entries(spec)) {
      expect(Reasons[reason as keyof typeof Reasons]).toMatchObject({ status, retryable })
    }
  })

  it('builds bodies that satisfy the InternLifecycleError schema; 401 without metadata', () => {
    for (const reason of Object.keys(Reasons) as (keyof typeof Reasons)[]) {
      const body = InternLifecycleError.parse(errorBody(reason, 'm'))
      if (reason === 'unauthorized') expect(body.error.metadata).toBeUndefined()
      else expect(body.error.metadata).toEqual({ reason, retryable: Reasons[reason].retryable })
    }
  })

  it('carries status, retryable and its canonical type on AppError', () => {
    const err = new AppError('upstream_unavailable', 'try again')
    expect([err.status, err.retryable, err.message, err.errorType]).toEqual([
      502,
      true,
      'try again',
      'provider_unavailable',
    ])
  })
})

describe('the one table of errors', () => {
  it('classifies every code of every wire by a canonical type the official client knows', async () => {
    const { ApiErrorType } = await import('@openrouter/sdk/models')
    const known = new Set<string>(Object.values(ApiErrorType))
    for (const section of [Reasons, ChatFinishReasons, GatewayErrors]) {
      for (const [code, row] of Object.entries(section)) expect(known.has(row.type), `${code}: ${row.type}`).toBe(true)
    }
    // Each gateway code is its own canonical type.
    for (const [code, row] of Object.entries(GatewayErrors)) expect(row.type).toBe(code)
  })

  it('renders each wire from the row: the gateway envelope, chat finish errors, the WebSocket event, the vault body', () => {
    expect(gatewayErrorBody('rate_limit_exceeded', 'slow down')).toEqual({
      error: { code: 429, message: 'slow down', metadata: { error_type: 'rate_limit_exceeded' } },
    })
    expect(chatFinishError('stream_severed', 'cut')).toEqual({
      code: 502,
      message: 'cut',
      metadata: { reason: 'stream_severed', retryable: true },
    })
    expect(chatFinishError('turn_failed', 'no', { retryable: false }).metadata.retryable).toBe(false)
    expect(chatFinishError('timeout', 'late').code).toBe(504)
    expect(webSocketErrorEvent(404, 'previous_response_not_found', 'gone', 'previous_response_id')).toEqual({
      type: 'error',
      status: 404,
      error: { type: 'not_found', code: 'previous_response_not_found', message: 'gone', param: 'previous_response_id' },
    })
    expect(vaultErrorBody('invalid_body', 'invalid request: name is empty')).toEqual({
      error: { code: 400, message: 'Invalid vault request: name is empty' },
    })
  })

  it('reads back from each body it renders whether trying again may help, as the row says', () => {
    for (const [reason, row] of Object.entries(Reasons)) {
      const { error } = errorBody(reason as keyof typeof Reasons, 'x') as { error: { metadata?: object } }
      // 401 carries no metadata: its status decides (not retryable), as its row says.
      expect(retryableAnswer(row.status, error.metadata), reason).toBe(row.retryable)
    }
    for (const [type, row] of Object.entries(GatewayErrors))
      expect(retryableAnswer(row.status, gatewayErrorBody(row.type, 'x').error.metadata), type).toBe(row.retryable)
    // A body that is not ours: the status alone.
    expect(retryableAnswer(503)).toBe(true)
    expect(retryableAnswer(429, { error_type: 'not a type' })).toBe(true)
    expect(retryableAnswer(400)).toBe(false)
  })
})
