import type { FastifyPluginAsync } from 'fastify'
import { z } from 'zod'
import { GatewayError, ResponsesRequest, type CallOptions, type FilterMatch } from '@roster/gateway'
import { AppError, managesAccount, resolveCallerByHash, type Caller } from '@roster/shared'
import { requireKey } from '../plugins/auth.js'
import type { AppDeps } from '../deps.js'
import { withPreset } from '@roster/gateway'
import { callerOf } from '../plugins/caller.js'

// POST /guardrails/dry-run (docs/console.md, issue 47): would this request pass the guardrails in
// force on a key, and which rule decides? The request is set up exactly as a real one is (the
// engine's own setup: region, content filters, model and provider limits, the workspace's own
// keys, presets), with no model called and nothing recorded or spent. It answers what the request
// would meet: refused, with the message that names the guardrail and its rule, or allowed, with the
// filters that matched (redactions made, flags) and the endpoints it would try.

const DryRun = z.strictObject({
  /** The request, as POST /responses takes it. */
  request: z.record(z.string(), z.unknown()),
  /** Another key of the workspace to check it as (by its hash); a management key's to ask. Default: the caller's own key. */
  key_hash: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /** The region of the host it would arrive at (default: the one this request arrived at). */
  region: z.enum(['global', 'europe', 'us']).optional(),
})

export const guardrailDryRunRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.post(
      '/guardrails/dry-run',
      { onRequest: requireKey(deps.authenticate), schema: { hide: true } },
      async (req) => {
        const body = DryRun.safeParse(req.body)
        if (!body.success) throw new AppError('invalid_body', `invalid request: ${body.error.issues[0]?.message}`)
        const parsed = ResponsesRequest.safeParse(body.data.request)
        if (!parsed.success)
          throw new AppError('invalid_body', `invalid request: /request ${parsed.error.issues[0]?.message}`)
        const caller = await asKey(deps, callerOf(req), body.data.key_hash)
        const matches: FilterMatch[] = []
        const guardrails = caller.guardrails ?? undefined
        const opts: CallOptions = {
          disabledTools: caller.disabledServerTools,
          ...(guardrails && {
            guardrails,
            region: body.data.region ?? deps.config.DATA_REGION_HOSTS[req.hostname.toLowerCase()] ?? 'global',
            onFilterMatch: (m: FilterMatch) => matches.push(m),
          }),
        }
        const names = new Map((guardrails ?? []).map((g) => [g.id, g.name]))
        const matched = () =>
          matches.map((m) => ({ guardrail: names.get(m.guardrail) ?? m.guardrail, filter: m.filter, action: m.action }))
        const inForce = (guardrails ?? []).map((g) => ({ id: g.id, name: g.name }))
        try {
          // A preset the request names is merged as a real request's is (one that is missing refuses it).
          const merging = withPreset(deps.presets, caller.workspaceId, parsed.data)
          const request = merging ? (await merging).req : parsed.data
          const plan = deps.responses.plan(request, opts)
          return {
            allowed: true,
            guardrails: inForce,
            matches: matched(),
            redacted: matches.some((m) => m.action === 'redact'),
            endpoints: plan.route.candidates.map((c) => ({ model: c.model.id, provider: c.endpoint.provider })),
          }
        } catch (err) {
          if (!(err instanceof GatewayError)) throw err
          return { allowed: false, guardrails: inForce, matches: matched(), status: err.status, reason: err.message }
        }
      },
    )
  }

/** The caller, or (for a management key) another key of its workspace. */
async function asKey(deps: AppDeps, caller: Caller, keyHash: string | undefined): Promise<Caller> {
  if (!keyHash || keyHash === caller.keyHash) return caller
  if (!managesAccount(caller))
    throw new AppError('management_key_required', 'checking another key needs a management key')
  const other = await resolveCallerByHash(deps.db, Buffer.from(keyHash, 'hex'))
  if (!other || other.workspaceId !== caller.workspaceId)
    throw new AppError('not_found', `no key ${keyHash} in this workspace`)
  return other
}
