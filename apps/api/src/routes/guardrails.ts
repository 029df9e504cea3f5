import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  addGuardrail,
  assignGuardrailKeys,
  assignGuardrailMembers,
  CreateGuardrailBody,
  dropGuardrail,
  getGuardrail,
  GuardrailListQuery,
  KeyHashesBody,
  listGuardrails,
  listKeyAssignments,
  listMemberAssignments,
  MemberIdsBody,
  PageQuery,
  patchGuardrail,
  unassignGuardrailKeys,
  unassignGuardrailMembers,
  UpdateGuardrailBody,
} from '@roster/shared'
import { requireKey } from '../plugins/auth.js'
import { refuseUnstorableText } from '../plugins/input-guards.js'
import type { AppDeps } from '../deps.js'
import { callerOf } from '../plugins/caller.js'

const Ref = z.object({ id: z.string().min(1).max(200) })
/** A guardrail is small (50 filters of 1,000 characters at most): past this a body is refused before it is parsed (413). */
const BODY_LIMIT = 256 * 1024

/**
 * Guardrails (`client.guardrails`): an account's policies on models, providers, regions, spend and
 * content, and their assignment to keys and members, for its management keys.
 */
export const guardrailRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.addHook('preValidation', refuseUnstorableText)
    const api = app.withTypeProvider<ZodTypeProvider>()
    const onRequest = requireKey(deps.authenticate)
    const g = deps.guardrails

    api.get(
      '/guardrails',
      {
        onRequest,
        schema: { operationId: 'listGuardrails', summary: 'A workspace’s guardrails', querystring: GuardrailListQuery },
      },
      async (req) => listGuardrails(g, callerOf(req), req.query),
    )
    api.post(
      '/guardrails',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: { operationId: 'createGuardrail', summary: 'Create a guardrail', body: CreateGuardrailBody },
      },
      async (req, reply) => reply.code(201).send(await addGuardrail(g, callerOf(req), req.body)),
    )
    api.get(
      '/guardrails/assignments/keys',
      {
        onRequest,
        schema: { operationId: 'listKeyAssignments', summary: 'Every key assignment', querystring: PageQuery },
      },
      async (req) => listKeyAssignments(g, callerOf(req), undefined, req.query),
    )
    api.get(
      '/guardrails/assignments/members',
      {
        onRequest,
        schema: { operationId: 'listMemberAssignments', summary: 'Every member assignment', querystring: PageQuery },
      },
      async (req) => listMemberAssignments(g, callerOf(req), undefined, req.query),
    )
    api.get(
      '/guardrails/:id',
      { onRequest, schema: { operationId: 'getGuardrail', summary: 'A guardrail', params: Ref } },
      async (req) => getGuardrail(g, callerOf(req), req.params.id),
    )
    api.patch(
      '/guardrails/:id',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: {
          operationId: 'updateGuardrail',
          summary: 'Change a guardrail',
          params: Ref,
          body: UpdateGuardrailBody,
        },
      },
      async (req) => patchGuardrail(g, callerOf(req), req.params.id, req.body),
    )
    api.delete(
      '/guardrails/:id',
      { onRequest, schema: { operationId: 'deleteGuardrail', summary: 'Delete a guardrail', params: Ref } },
      async (req) => dropGuardrail(g, callerOf(req), req.params.id),
    )
    api.get(
      '/guardrails/:id/assignments/keys',
      {
        onRequest,
        schema: {
          operationId: 'listGuardrailKeyAssignments',
          summary: 'A guardrail’s keys',
          params: Ref,
          querystring: PageQuery,
        },
      },
      async (req) => listKeyAssignments(g, callerOf(req), req.params.id, req.query),
    )
    api.post(
      '/guardrails/:id/assignments/keys',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: { operationId: 'bulkAssignKeys', summary: 'Assign keys', params: Ref, body: KeyHashesBody },
      },
      async (req) => assignGuardrailKeys(g, callerOf(req), req.params.id, req.body.key_hashes),
    )
    api.post(
      '/guardrails/:id/assignments/keys/remove',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: { operationId: 'bulkUnassignKeys', summary: 'Unassign keys', params: Ref, body: KeyHashesBody },
      },
      async (req) => unassignGuardrailKeys(g, callerOf(req), req.params.id, req.body.key_hashes),
    )
    api.get(
      '/guardrails/:id/assignments/members',
      {
        onRequest,
        schema: {
          operationId: 'listGuardrailMemberAssignments',
          summary: 'A guardrail’s members',
          params: Ref,
          querystring: PageQuery,
        },
      },
      async (req) => listMemberAssignments(g, callerOf(req), req.params.id, req.query),
    )
    api.post(
      '/guardrails/:id/assignments/members',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: { operationId: 'bulkAssignMembers', summary: 'Assign members', params: Ref, body: MemberIdsBody },
      },
      async (req) => assignGuardrailMembers(g, callerOf(req), req.params.id, req.body.member_user_ids),
    )
    api.post(
      '/guardrails/:id/assignments/members/remove',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: { operationId: 'bulkUnassignMembers', summary: 'Unassign members', params: Ref, body: MemberIdsBody },
      },
      async (req) => unassignGuardrailMembers(g, callerOf(req), req.params.id, req.body.member_user_ids),
    )
  }
