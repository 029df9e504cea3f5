import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { type FleetView } from '@roster/shared'
import { drainHostOrExplain, fleetTimes, hostsView } from '@roster/shared/fleet'
import { failingDestinations } from '@roster/shared/repositories'
import type { AppDeps } from '../deps.js'

// The operator's reads and actions (docs/operating.md), for OPERATOR_TOKEN only (operator-access.ts):
// the fleet at a glance (the console's fleet page reads it in one call) and draining a host. Not
// part of the public API (hidden from the OpenAPI document), as the admin CLI is not.

/** Failing destinations listed at most (most failures first). */
const FAILING_SHOWN = 100

const HostParams = z.object({ hostId: z.string().min(1).max(200) })

export const operatorRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<ZodTypeProvider>()
    const times = fleetTimes(deps.config)
    const guard = deps.operator.guard

    api.get('/operator/fleet', { onRequest: guard, schema: { hide: true } }, async (req, reply) => {
      const [hosts, queues, failing] = await Promise.all([
        hostsView(deps.db, times),
        // Redis away: the hosts and destinations still show, the queues say why they do not.
        deps.queues.depths().catch((err: unknown) => {
          req.log.warn({ err }, 'queue depths could not be read')
          return null
        }),
        failingDestinations(deps.db, FAILING_SHOWN),
      ])
      const view: FleetView = {
        hosts,
        queues,
        dashboard_url: deps.config.OPERATOR_DASHBOARD_URL ?? null,
        failing_destinations: failing.map((d) => ({
          id: d.id,
          account_id: d.account_id,
          workspace_id: d.workspace_id,
          type: d.type,
          name: d.name,
          enabled: d.enabled,
          failures: d.failures,
          last_error: d.last_error,
          last_delivered_at: d.last_delivered_at?.toISOString() ?? null,
        })),
      }
      return reply.header('cache-control', 'no-store').send(view)
    })

    api.post(
      '/operator/runtime-hosts/:hostId/drain',
      { onRequest: guard, schema: { hide: true, params: HostParams } },
      async (req, reply) => reply.code(202).send(await drainHostOrExplain(deps.db, times, req.params.hostId)),
    )
  }
