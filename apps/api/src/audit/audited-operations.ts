import type { FastifyInstance, FastifyRequest } from 'fastify'
import {
  auditActor,
  getBudget,
  getByok,
  getDestination,
  getGuardrail,
  getKey,
  getWorkspace,
  listKeyAssignments,
  listMemberAssignments,
  listMembers,
  organizationMember,
  recordAudit,
  scopeOf,
  type Caller,
} from '@roster/shared'
import type { AppDeps } from '../deps.js'

// Which API operations are governance changes, and how each is written to the audit log
// (docs/audit.md): one table, read by one hook, so a route is audited by its operation id alone.
// `before` reads the target as its own GET shows it (undefined where there was none); `after` is
// what the change answered (null for a delete); the request's body is kept too. Secrets are masked
// (audit.ts). An event is written after the change commits and before the answer is sent.

type Params = Record<string, string>
interface Audited {
  action: string
  target: string
  /** The target's id: from the path, else from the answer (a create's new id). */
  id: (params: Params, answer: unknown) => string | undefined
  before?: (deps: AppDeps, caller: Caller, params: Params) => Promise<unknown>
}

const dataOf = (v: unknown) => (v && typeof v === 'object' && 'data' in v ? (v as { data: unknown }).data : v)
const answerField = (field: string) => (_: Params, answer: unknown) => {
  const d = dataOf(answer) as Record<string, unknown> | undefined
  return typeof d?.[field] === 'string' ? (d[field] as string) : undefined
}
const param = (name: string) => (p: Params) => p[name]
const everyPage = { offset: 0, limit: 100 }

const key = (d: AppDeps, c: Caller, p: Params) => getKey(d.keys, scopeOf(c), p.hash!).then(dataOf)
const workspace = (d: AppDeps, c: Caller, p: Params) => getWorkspace(d.workspaces, c, p.id!).then(dataOf)
const members = (d: AppDeps, c: Caller, p: Params) => listMembers(d.workspaces, c, p.id!, everyPage).then(dataOf)
const budget = (d: AppDeps, c: Caller, p: Params) =>
  getBudget(d.workspaces, c, p.workspace_ref!, p.interval!).then(dataOf)
const guardrail = (d: AppDeps, c: Caller, p: Params) => getGuardrail(d.guardrails, c, p.id!).then(dataOf)
const guardrailKeys = (d: AppDeps, c: Caller, p: Params) =>
  listKeyAssignments(d.guardrails, c, p.id!, everyPage).then(dataOf)
const guardrailMembers = (d: AppDeps, c: Caller, p: Params) =>
  listMemberAssignments(d.guardrails, c, p.id!, everyPage).then(dataOf)
const byok = (d: AppDeps, c: Caller, p: Params) => getByok(d.byok, c, p.id!).then(dataOf)
const destination = (d: AppDeps, c: Caller, p: Params) => getDestination(d.destinations, c, p.id!).then(dataOf)
const member = (d: AppDeps, c: Caller, p: Params) => organizationMember(d.db, c, p.id!).then(dataOf)

export const AUDITED: Record<string, Audited> = {
  createKeys: { action: 'key.create', target: 'key', id: answerField('hash') },
  updateKeys: { action: 'key.update', target: 'key', id: param('hash'), before: key },
  deleteKeys: { action: 'key.delete', target: 'key', id: param('hash'), before: key },
  createWorkspace: { action: 'workspace.create', target: 'workspace', id: answerField('id') },
  updateWorkspace: { action: 'workspace.update', target: 'workspace', id: param('id'), before: workspace },
  deleteWorkspace: { action: 'workspace.delete', target: 'workspace', id: param('id'), before: workspace },
  bulkAddWorkspaceMembers: { action: 'workspace.members_add', target: 'workspace', id: param('id'), before: members },
  bulkRemoveWorkspaceMembers: {
    action: 'workspace.members_remove',
    target: 'workspace',
    id: param('id'),
    before: members,
  },
  setWorkspaceBudget: {
    action: 'budget.set',
    target: 'budget',
    id: (p) => `${p.workspace_ref}/${p.interval}`,
    before: budget,
  },
  deleteWorkspaceBudget: {
    action: 'budget.delete',
    target: 'budget',
    id: (p) => `${p.workspace_ref}/${p.interval}`,
    before: budget,
  },
  createGuardrail: { action: 'guardrail.create', target: 'guardrail', id: answerField('id') },
  updateGuardrail: { action: 'guardrail.update', target: 'guardrail', id: param('id'), before: guardrail },
  deleteGuardrail: { action: 'guardrail.delete', target: 'guardrail', id: param('id'), before: guardrail },
  bulkAssignKeys: { action: 'guardrail.keys_assign', target: 'guardrail', id: param('id'), before: guardrailKeys },
  bulkUnassignKeys: {
    action: 'guardrail.keys_unassign',
    target: 'guardrail',
    id: param('id'),
    before: guardrailKeys,
  },
  bulkAssignMembers: {
    action: 'guardrail.members_assign',
    target: 'guardrail',
    id: param('id'),
    before: guardrailMembers,
  },
  bulkUnassignMembers: {
    action: 'guardrail.members_unassign',
    target: 'guardrail',
    id: param('id'),
    before: guardrailMembers,
  },
  createByokKey: { action: 'provider_key.create', target: 'provider_key', id: answerField('id') },
  updateByokKey: { action: 'provider_key.update', target: 'provider_key', id: param('id'), before: byok },
  deleteByokKey: { action: 'provider_key.delete', target: 'provider_key', id: param('id'), before: byok },
  createObservabilityDestination: { action: 'destination.create', target: 'destination', id: answerField('id') },
  updateObservabilityDestination: {
    action: 'destination.update',
    target: 'destination',
    id: param('id'),
    before: destination,
  },
  deleteObservabilityDestination: {
    action: 'destination.delete',
    target: 'destination',
    id: param('id'),
    before: destination,
  },
  addOrganizationMember: { action: 'member.create', target: 'member', id: answerField('id') },
  updateOrganizationMember: { action: 'member.update', target: 'member', id: param('id'), before: member },
}

const operationOf = (req: FastifyRequest) =>
  (req.routeOptions.schema as { operationId?: string } | undefined)?.operationId

/** What the hooks carry from before the change to after it. */
const pending = new WeakMap<FastifyRequest, { entry: Audited; before: unknown }>()

/** Registers the hooks that write every audited operation's event. */
export function auditGovernance(app: FastifyInstance, deps: AppDeps) {
  app.addHook('preHandler', async (req) => {
    const op = operationOf(req)
    const entry = op ? AUDITED[op] : undefined
    if (!entry || !req.caller) return
    // A target that cannot be read (not found, not the caller's): the change will be refused too.
    const before = entry.before
      ? await entry.before(deps, req.caller, req.params as Params).catch(() => undefined)
      : undefined
    pending.set(req, { entry, before })
  })
  app.addHook('onSend', async (req, reply, payload) => {
    const p = pending.get(req)
    if (!p || reply.statusCode >= 300 || !req.caller) return payload
    pending.delete(req)
    let answer: unknown = null
    if (typeof payload === 'string' && payload) {
      try {
        answer = JSON.parse(payload)
      } catch {
        answer = null
      }
    }
    const caller = req.caller
    try {
      await recordAudit(deps.db, {
        accountId: caller.accountId,
        ...(await auditActor(deps.db, caller)),
        via: req.viaConsoleSession ? 'console' : 'api',
        action: p.entry.action,
        targetType: p.entry.target,
        targetId: p.entry.id(req.params as Params, answer) ?? null,
        before: p.before ?? null,
        after: req.method === 'DELETE' ? null : dataOf(answer),
        request: req.body ?? null,
        ip: req.ip,
      })
    } catch (err) {
      // The change is made; its event is not. Loud, so an operator sees the gap.
      req.log.error({ err, action: p.entry.action }, 'audit event not written')
    }
    return payload
  })
}
