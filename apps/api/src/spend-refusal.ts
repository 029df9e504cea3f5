import { usdOfPico, type SpendLimit } from '@roster/shared'
import { GatewayError } from '@roster/gateway'

const WINDOW = { daily: 'day', weekly: 'week', monthly: 'month' } as const

/** The 402 for a request whose limit is spent: which limit, how much, and what lifts it. */
export function spentRefusal(limit: SpendLimit): GatewayError {
  const usd = `$${usdOfPico(limit.pico).toFixed(6)}`
  if (limit.of === 'account')
    return new GatewayError(
      402,
      'payment_required',
      `this account has used its credits (${usd}); an operator grants more with \`admin account credits\``,
    )
  const window = limit.reset ? `this ${WINDOW[limit.reset]} (UTC)` : 'its lifetime'
  if (limit.of === 'guardrail')
    return new GatewayError(
      402,
      'payment_required',
      `the guardrail ${JSON.stringify(limit.name ?? '')} limits ${limit.member ? 'this member' : 'this key'} to ${usd} for ${window}, and that is spent; raise its limit (PATCH /api/v1/guardrails/{id}) or wait for the window to reset`,
    )
  if (limit.of === 'workspace')
    return new GatewayError(
      402,
      'payment_required',
      `this workspace has reached its ${limit.reset ?? 'lifetime'} budget of ${usd} for ${window}; raise it (PUT /api/v1/workspaces/{id}/budgets/${limit.reset ?? 'lifetime'}) or wait for the window to reset`,
    )
  return new GatewayError(
    402,
    'payment_required',
    `this key has spent its limit of ${usd} for ${window}; raise the limit (PATCH /api/v1/keys/{hash}) or wait for the window to reset`,
  )
}
