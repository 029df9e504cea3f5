import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  assertManagementKey,
  CreateKeyBody,
  createKey,
  currentKey,
  deleteKey,
  getKey,
  ListKeysQuery,
  listKeys,
  UpdateKeyBody,
  updateKey,
  scopeOf,
  ownOnly,
  resolveCallerByHash,
  usdOfPico,
  type KeyScope,
} from '@roster/shared'
import { requireKey } from '../plugins/auth.js'
import { refuseUnstorableText } from '../plugins/input-guards.js'
import type { AppDeps } from '../deps.js'
import { callerOf } from '../plugins/caller.js'

/**
 * The keys the caller may manage: its account's, when it holds a management key or is an admin
 * signed in as themselves; a member signed in to the console, their own (else 403 on a create, 401
 * elsewhere).
 */
function manager(req: FastifyRequest, op: 'create' | 'other' = 'other'): KeyScope {
  const caller = callerOf(req)
  const userId = ownOnly(caller)
  if (userId) return { ...scopeOf(caller), userId }
  assertManagementKey(caller, op)
  return scopeOf(caller)
}

const HashParams = z.object({ hash: z.string() })
/** A key's settings are small: past this a body is refused before it is parsed (413). */
const KEY_BODY_LIMIT = 16 * 1024

/**
 * API keys (`client.apiKeys`): management keys create and manage the user keys of their account's
 * workspaces; any key reads its own settings and spend (GET /key). Errors in the standard envelope.
 */
export const keyRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.addHook('preValidation', refuseUnstorableText)
    const api = app.withTypeProvider<ZodTypeProvider>()
    const anyKey = requireKey(deps.authenticate)

    api.post(
      '/keys',
      {
        onRequest: anyKey,
        bodyLimit: KEY_BODY_LIMIT,
        schema: { operationId: 'createKeys', summary: 'Create an API key (management key)', body: CreateKeyBody },
      },
      async (req, reply) => reply.code(201).send(await createKey(deps.keys, manager(req, 'create'), req.body)),
    )
    api.get(
      '/keys',
      {
        onRequest: anyKey,
        schema: {
          operationId: 'list',
          summary: 'API keys of a workspace (management key)',
          querystring: ListKeysQuery,
        },
      },
      async (req) => listKeys(deps.keys, manager(req), req.query),
    )
    api.get(
      '/keys/:hash',
      {
        onRequest: anyKey,
        schema: { operationId: 'getKey', summary: 'One API key (management key)', params: HashParams },
      },
      async (req) => getKey(deps.keys, manager(req), req.params.hash),
    )
    api.get(
      '/keys/:hash/limits',
      {
        onRequest: anyKey,
        schema: {
          operationId: 'getKeyLimits',
          summary: 'Every limit a key counts against, what is left of each, and which binds (management key)',
          params: HashParams,
        },
      },
      async (req) => {
        await getKey(deps.keys, manager(req), req.params.hash) // another account's: 404, as for GET
        const key = await resolveCallerByHash(deps.db, Buffer.from(req.params.hash, 'hex'))
        const standing = await deps.spendLimits.standing(key?.limits ?? [])
        const rows = standing.map(({ limit, spentPico }) => ({
          of: limit.member ? 'member' : limit.of,
          name: limit.name ?? null,
          limit_usd: usdOfPico(limit.pico),
          reset: limit.reset,
          spent_usd: usdOfPico(spentPico),
          remaining_usd: usdOfPico(limit.pico > spentPico ? limit.pico - spentPico : 0n),
        }))
        // The one that binds: the least left (the first such, in the order the spend check counts them).
        const least = rows.reduce((m, r, i) => (r.remaining_usd < rows[m]!.remaining_usd ? i : m), 0)
        return { data: rows.map((r, i) => ({ ...r, binds: i === least })) }
      },
    )
    api.patch(
      '/keys/:hash',
      {
        onRequest: anyKey,
        bodyLimit: KEY_BODY_LIMIT,
        schema: {
          operationId: 'updateKeys',
          summary: 'Change an API key: name, disabled, limit (management key)',
          params: HashParams,
          body: UpdateKeyBody,
        },
      },
      async (req) => updateKey(deps.keys, manager(req), req.params.hash, req.body),
    )
    api.delete(
      '/keys/:hash',
      {
        onRequest: anyKey,
        schema: { operationId: 'deleteKeys', summary: 'Delete an API key (management key)', params: HashParams },
      },
      async (req) => deleteKey(deps.keys, manager(req), req.params.hash),
    )
    api.get(
      '/key',
      {
        onRequest: anyKey,
        schema: { operationId: 'getCurrentKey', summary: 'The calling key: its limit and spend' },
      },
      async (req) => currentKey(deps.keys, callerOf(req).keyId),
    )
  }
