import type { FastifyPluginAsync } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  addMembers,
  addWorkspace,
  BudgetBody,
  CreateWorkspaceBody,
  DeleteWorkspaceQuery,
  dropWorkspace,
  getBudget,
  getWorkspace,
  listBudgets,
  listMembers,
  listWorkspaces,
  MembersBody,
  PageQuery,
  patchWorkspace,
  removeBudget,
  removeMembers,
  setBudget,
  UpdateWorkspaceBody,
} from '@roster/shared'
import { requireKey } from '../plugins/auth.js'
import { refuseUnstorableText } from '../plugins/input-guards.js'
import type { AppDeps } from '../deps.js'
import { callerOf } from '../plugins/caller.js'

const Ref = z.object({ id: z.string().min(1).max(200) })
const BudgetRef = z.object({ workspace_ref: z.string().min(1).max(200), interval: z.string().max(64) })
/** A workspace's settings are small: past this a body is refused before it is parsed (413). */
const BODY_LIMIT = 64 * 1024

/**
 * Workspaces (`client.workspaces`): an account's workspaces, their members and budgets, for its
 * management keys. Errors in the standard envelope; a workspace is named by its id or its slug.
 */
export const workspaceRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.addHook('preValidation', refuseUnstorableText)
    const api = app.withTypeProvider<ZodTypeProvider>()
    const onRequest = requireKey(deps.authenticate)
    const ws = deps.workspaces

    api.get(
      '/workspaces',
      {
        onRequest,
        schema: { operationId: 'listWorkspaces', summary: 'The account’s workspaces', querystring: PageQuery },
      },
      async (req) => listWorkspaces(ws, callerOf(req), req.query),
    )
    api.post(
      '/workspaces',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: { operationId: 'createWorkspace', summary: 'Create a workspace', body: CreateWorkspaceBody },
      },
      async (req, reply) => reply.code(201).send(await addWorkspace(ws, callerOf(req), req.body)),
    )
    api.get(
      '/workspaces/:id',
      { onRequest, schema: { operationId: 'getWorkspace', summary: 'A workspace, by id or slug', params: Ref } },
      async (req) => getWorkspace(ws, callerOf(req), req.params.id),
    )
    api.patch(
      '/workspaces/:id',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: {
          operationId: 'updateWorkspace',
          summary: 'Change a workspace',
          params: Ref,
          body: UpdateWorkspaceBody,
        },
      },
      async (req) => patchWorkspace(ws, callerOf(req), req.params.id, req.body),
    )
    api.delete(
      '/workspaces/:id',
      {
        onRequest,
        schema: {
          operationId: 'deleteWorkspace',
          summary: 'Delete a workspace without active keys',
          params: Ref,
          querystring: DeleteWorkspaceQuery,
        },
      },
      async (req) =>
        dropWorkspace(ws, callerOf(req), req.params.id, req.query.confirm_default_workspace_deletion === 'true'),
    )
    api.get(
      '/workspaces/:id/members',
      {
        onRequest,
        schema: {
          operationId: 'listWorkspaceMembers',
          summary: 'A workspace’s members',
          params: Ref,
          querystring: PageQuery,
        },
      },
      async (req) => listMembers(ws, callerOf(req), req.params.id, req.query),
    )
    api.post(
      '/workspaces/:id/members/add',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: { operationId: 'bulkAddWorkspaceMembers', summary: 'Add members', params: Ref, body: MembersBody },
      },
      async (req) => addMembers(ws, callerOf(req), req.params.id, req.body.user_ids),
    )
    api.post(
      '/workspaces/:id/members/remove',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: {
          operationId: 'bulkRemoveWorkspaceMembers',
          summary: 'Remove members',
          params: Ref,
          body: MembersBody,
        },
      },
      async (req) => removeMembers(ws, callerOf(req), req.params.id, req.body.user_ids),
    )
    api.get(
      '/workspaces/:workspace_ref/budgets',
      {
        onRequest,
        schema: {
          operationId: 'listWorkspaceBudgets',
          summary: 'A workspace’s budgets',
          params: z.object({ workspace_ref: z.string().min(1).max(200) }),
        },
      },
      async (req) => listBudgets(ws, callerOf(req), req.params.workspace_ref),
    )
    api.get(
      '/workspaces/:workspace_ref/budgets/:interval',
      { onRequest, schema: { operationId: 'getWorkspaceBudget', summary: 'One budget', params: BudgetRef } },
      async (req) => getBudget(ws, callerOf(req), req.params.workspace_ref, req.params.interval),
    )
    api.put(
      '/workspaces/:workspace_ref/budgets/:interval',
      {
        onRequest,
        bodyLimit: BODY_LIMIT,
        schema: {
          operationId: 'setWorkspaceBudget',
          summary: 'Create or replace a budget',
          params: BudgetRef,
          body: BudgetBody,
        },
      },
      async (req) => setBudget(ws, callerOf(req), req.params.workspace_ref, req.params.interval, req.body),
    )
    api.delete(
      '/workspaces/:workspace_ref/budgets/:interval',
      { onRequest, schema: { operationId: 'deleteWorkspaceBudget', summary: 'Delete a budget', params: BudgetRef } },
      async (req) => removeBudget(ws, callerOf(req), req.params.workspace_ref, req.params.interval),
    )
  }
