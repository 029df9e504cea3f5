import { afterAll, beforeAll } from 'vitest'
import { createTestDatabase, type TestDatabase } from './database.js'
import {
  createAccount,
  createApiKey,
  createUser,
  createWorkspace,
  type ApiKeyKind,
  type Db,
  type GenerationRecord,
  type Prisma,
} from '@roster/shared'

export interface Tenant {
  accountId: string
  workspaceId: string
  userId: string
  keys: Record<'user' | 'organization' | 'management', string>
}

/** An account, a workspace, a member and one key per kind; every flag overridable. */
export async function makeTenant(
  db: Db,
  opts: { inProgramme?: boolean; lifecycleWrites?: boolean; vaultWrites?: boolean; internsEnabled?: boolean } = {},
): Promise<Tenant> {
  const { account_id } = await createAccount(db, opts)
  const { workspace_id } = await createWorkspace(db, { accountId: account_id, internsEnabled: opts.internsEnabled })
  const { user_id } = await createUser(db, { workspaceId: workspace_id })
  const key = async (kind: ApiKeyKind, userId?: string) =>
    (await createApiKey(db, { kind, workspaceId: workspace_id, userId })).key
  return {
    accountId: account_id,
    workspaceId: workspace_id,
    userId: user_id,
    keys: {
      user: await key('user', user_id),
      organization: await key('organization'),
      management: await key('management'),
    },
  }
}

export async function makeUserKey(db: Db, workspaceId: string): Promise<{ userId: string; key: string }> {
  const { user_id } = await createUser(db, { workspaceId })
  const { key } = await createApiKey(db, { kind: 'user', workspaceId, userId: user_id })
  return { userId: user_id, key }
}

export async function makeInternKey(db: Db, workspaceId: string, internId: string): Promise<string> {
  return (await createApiKey(db, { kind: 'intern', workspaceId, internId })).key
}

let internSeq = 0
/**
 * An intern row as the record holds it, written directly (no API, no worker): for tests of what
 * reads and changes the record (transitions, placement, the reconciler). Queued, generation 1, in
 * the tenant's workspace and by its member unless `fields` say otherwise; named uniquely.
 */
export async function makeIntern(
  db: Db,
  tenant: Pick<Tenant, 'workspaceId' | 'userId'>,
  fields: Partial<Prisma.InternUncheckedCreateInput> = {},
) {
  return db.intern.create({
    data: {
      workspaceId: tenant.workspaceId,
      creatorUserId: tenant.userId,
      name: `intern-${process.pid}-${++internSeq}`,
      status: 'queued',
      provisionGeneration: 1,
      ...fields,
    },
  })
}

/**
 * For a test file: a database cloned from the template and a tenant in it, made before the file's
 * tests and dropped after them. Read them inside tests (they exist once beforeAll has run).
 */
export function useTestTenant(): { readonly t: TestDatabase; readonly tenant: Tenant } {
  let t: TestDatabase | undefined
  let tenant: Tenant | undefined
  beforeAll(async () => {
    t = await createTestDatabase()
    tenant = await makeTenant(t.db)
  })
  afterAll(async () => t?.drop())
  return {
    get t() {
      return t!
    },
    get tenant() {
      return tenant!
    },
  }
}

/** A generation as the ledger writes one: a call of `m/x` costing `cost_pico`, every other field empty. */
export function generationRecord(over: Partial<GenerationRecord> & { id: string }): GenerationRecord {
  return {
    request_id: over.id,
    created_at: new Date().toISOString(),
    key_id: null,
    workspace_id: null,
    account_id: null,
    user_id: null,
    intern_id: null,
    model: 'm/x',
    provider: 'p',
    upstream_model: null,
    door: 'responses',
    tokens_prompt: 1,
    tokens_completion: 1,
    tokens_reasoning: 0,
    tokens_cached: 0,
    cost_pico: '0',
    is_byok: false,
    latency_ms: null,
    generation_time_ms: null,
    ttft_ms: null,
    streamed: false,
    cancelled: false,
    finish_reason: null,
    upstream_id: null,
    session_id: null,
    http_referer: null,
    app_title: null,
    user_agent: null,
    external_user: null,
    preset_id: null,
    provider_responses: [],
    ...over,
  }
}
