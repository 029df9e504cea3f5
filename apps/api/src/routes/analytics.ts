import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import {
  ActivityQuery,
  AnalyticsQueryBody,
  analyticsMeta,
  assertManagementKey,
  listOrganizationMembers,
  PageQuery,
  queryAnalytics,
  userActivity,
} from '@roster/shared'
import { requireKey } from '../plugins/auth.js'
import { refuseUnstorableText } from '../plugins/input-guards.js'
import type { AppDeps } from '../deps.js'
import { callerOf } from '../plugins/caller.js'

/**
 * Analytics (`client.analytics`): an account's activity and its generations summed any way it
 * asks, from the hourly rollups; and the organization's members they name (`client.organization`).
 * For the account's management keys.
 */
export const analyticsRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.addHook('preValidation', refuseUnstorableText)
    const api = app.withTypeProvider<ZodTypeProvider>()
    const onRequest = requireKey(deps.authenticate)

    api.get(
      '/activity',
      {
        onRequest,
        schema: {
          operationId: 'getUserActivity',
          summary: 'The last 30 days, by day and model',
          querystring: ActivityQuery,
        },
      },
      async (req) => userActivity(deps.db, callerOf(req), req.query),
    )
    api.get(
      '/analytics/meta',
      { onRequest, schema: { operationId: 'getAnalyticsMeta', summary: 'What an analytics query may name' } },
      async (req) => analyticsMeta(callerOf(req)),
    )
    api.post(
      '/analytics/query',
      {
        onRequest,
        bodyLimit: 64 * 1024,
        schema: { operationId: 'queryAnalytics', summary: 'Sum generations any way', body: AnalyticsQueryBody },
      },
      async (req) => {
        // Only a management key's answer is shared, and only with its own account.
        const accountId = assertManagementKey(callerOf(req), 'create', 'reading analytics')
        return deps.analytics.get(accountId, req.body, () => queryAnalytics(deps.db, callerOf(req), req.body))
      },
    )
    // The organization's members: who the activity's user_id and the analytics' `user` name.
    api.get(
      '/organization/members',
      {
        onRequest,
        schema: { operationId: 'listOrganizationMembers', summary: 'The account’s members', querystring: PageQuery },
      },
      async (req) => listOrganizationMembers(deps.db, callerOf(req), req.query),
    )
  }
