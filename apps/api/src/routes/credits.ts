import type { FastifyPluginAsync } from 'fastify'
import { assertManagementKey, creditsView } from '@roster/shared'
import { requireKey } from '../plugins/auth.js'
import type { AppDeps } from '../deps.js'
import { callerOf } from '../plugins/caller.js'

/**
 * Credits (`client.credits`): what an operator granted the caller's account and what its
 * generations used (the ledger's sum, written within a second of each reply). A management key's
 * call, as the client documents it (403 for another key).
 */
export const creditRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/credits',
      {
        onRequest: requireKey(deps.authenticate),
        schema: { operationId: 'getCredits', summary: 'Credits granted and used (management key)' },
      },
      async (req) => {
        // A member signed in as themselves reads the account's credits too (their spend draws on them).
        if (!callerOf(req).person) assertManagementKey(callerOf(req), 'create', 'reading credits')
        return { data: await creditsView(deps.db, callerOf(req).accountId) }
      },
    )
  }
