import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  ActivityQuery,
  AnalyticsQueryBody,
  analyticsMeta,
  analyticsScope,
  listOrganizationMembers,
  organizationMember,
  addOrganizationMember,
  AddMemberBody,
  updateOrganizationMember,
  UpdateMemberBody,
  AuditLogQuery,
  listAuditEvents,
  PageQuery,
  queryAnalytics,
  userActivity,
} from '@roster/shared'
import { keyHashesOfMember } from '@roster/shared/repositories'
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
      async (req) => userActivity(deps.readDb, callerOf(req), req.query),
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
        // An answer is shared only with its own account (a member's, with that member alone).
        const scope = analyticsScope(callerOf(req))
        const sharedBy = scope.userId ? `${scope.accountId}/${scope.userId}` : scope.accountId
        return deps.analytics.get(sharedBy, req.body, () => queryAnalytics(deps.readDb, callerOf(req), req.body))
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
    // Roster's: members added by e-mail (whom single sign-on matches), their role and standing changed.
    const MemberRef = z.object({ id: z.string().min(1).max(200) })
    api.get(
      '/organization/members/:id',
      { onRequest, schema: { operationId: 'getOrganizationMember', summary: 'A member', params: MemberRef } },
      async (req) => organizationMember(deps.db, callerOf(req), req.params.id),
    )
    api.post(
      '/organization/members',
      {
        onRequest,
        bodyLimit: 16 * 1024,
        schema: { operationId: 'addOrganizationMember', summary: 'Add a member by e-mail', body: AddMemberBody },
      },
      async (req, reply) => reply.code(201).send(await addOrganizationMember(deps.db, callerOf(req), req.body)),
    )
    api.patch(
      '/organization/members/:id',
      {
        onRequest,
        bodyLimit: 16 * 1024,
        schema: {
          operationId: 'updateOrganizationMember',
          summary: 'Change a member: role, disabled, names',
          params: MemberRef,
          body: UpdateMemberBody,
        },
      },
      async (req) => {
        const answer = await updateOrganizationMember(deps.db, callerOf(req), req.params.id, req.body)
        // A disabled member's sessions end, a new role applies: this process forgets them at once, the others within AUTH_CACHE_MS.
        if (req.body.disabled !== undefined || req.body.role) deps.authenticate.forgetMember(req.params.id)
        // A disabled member's keys stop (and an enabled one's start) on every process at once.
        if (req.body.disabled !== undefined)
          for (const hash of await keyHashesOfMember(deps.db, req.params.id)) await deps.keys.changed(hash)
        return answer
      },
    )
    // The audit log of governance changes (docs/audit.md).
    api.get(
      '/audit-log',
      {
        onRequest,
        schema: {
          operationId: 'listAuditEvents',
          summary: 'Governance changes, newest first',
          querystring: AuditLogQuery,
        },
      },
      async (req) => listAuditEvents(deps.readDb, callerOf(req), req.query),
    )
  }
