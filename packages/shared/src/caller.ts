import type { Db } from './db.js'
import type { ApiKeyKind } from './api-keys.js'
import { hashApiKey } from './api-keys.js'
import { digestsEqual } from '@roster/platform'
import { keyByHash, type CallerGuardrail } from './repositories/api-keys.js'
import { memberSpendOwner, PICO_PER_MICRO, type SpendLimit } from '@roster/protocol'
import type { AppliedGuardrail } from '@roster/protocol'

/** Who is calling: resolved from the bearer key in one indexed lookup. */
export interface Caller {
  keyId: string
  kind: ApiKeyKind
  workspaceId: string
  accountId: string
  /** The member the key acts for (user keys only). */
  userId: string | null
  /** The intern a key of kind `intern` belongs to. */
  internId: string | null
  inProgramme: boolean
  lifecycleWrites: boolean
  /** The account's vault writes switch (an operator setting; on by default). */
  vaultWrites: boolean
  internsEnabled: boolean
  /** Epoch milliseconds after which the key no longer authenticates (a cached answer included); null: never. */
  expiresAt: number | null
  /**
   * What the key's requests spend is bounded by: its own limit, its workspace's budgets, its
   * account's credits (none: no check at all). A change of the key or the workspace reaches every
   * process with its change event; a change of credits, within AUTH_CACHE_MS.
   */
  limits: readonly SpendLimit[]
  /** The share of requests whose content its workspace keeps (private logging; 0: off). */
  ioLoggingRate: number
  /** Server tools the workspace refuses (403), as `openrouter:<name>`; null: none. */
  disabledServerTools: ReadonlySet<string> | null
  /**
   * The guardrails whose rules apply to the key's requests (the workspace's default, the key's, its
   * member's), all together; null: none (their spend limits are in `limits`).
   */
  guardrails: readonly AppliedGuardrail[] | null
  /** The key's digest in hex (how provider keys' allow-lists name it). */
  keyHash: string
  /** Whether the workspace has provider keys of its own (BYOK): only then are they looked up. */
  hasByok: boolean
  /**
   * The person a single sign-on console session is for (docs/console.md): the member, their e-mail,
   * and whether the account's admin (an admin manages the account as a management key does).
   * Absent for a key's own requests.
   */
  person?: { userId: string; email: string; admin: boolean }
}

/** A key's caller acting for the person signed in as `member` (their console key's, docs/console.md). */
export const asPerson = (caller: Caller, member: { id: string; email: string | null; role: string }): Caller => ({
  ...caller,
  person: { userId: member.id, email: member.email ?? '', admin: member.role === 'org:admin' },
})

/** The member whose own things alone a caller reaches (a member signed in as themselves), else undefined. */
export const ownOnly = (caller: Caller): string | undefined =>
  caller.person && !caller.person.admin ? caller.person.userId : undefined

/** Whether the caller manages its account: a management key, or an admin signed in as themselves. */
export const managesAccount = (caller: Caller): boolean => caller.kind === 'management' || caller.person?.admin === true

export function resolveCaller(db: Db, token: string): Promise<Caller | undefined> {
  return resolveCallerByHash(db, hashApiKey(token))
}

/** The caller of the key with this digest (a console session holds the digest, never the key). */
export async function resolveCallerByHash(db: Db, hash: Buffer): Promise<Caller | undefined> {
  const row = await keyByHash(db, hash)
  if (!row || !digestsEqual(Buffer.from(row.hash), hash)) return undefined
  return {
    keyId: row.id,
    kind: row.kind,
    workspaceId: row.workspace_id,
    accountId: row.account_id,
    userId: row.kind === 'user' ? row.user_id : null,
    internId: row.kind === 'intern' ? row.intern_id : null,
    inProgramme: row.in_programme,
    lifecycleWrites: row.lifecycle_writes,
    vaultWrites: row.vault_writes,
    internsEnabled: row.interns_enabled,
    expiresAt: row.expires_ms,
    limits: [
      ...(row.limit_micros === null
        ? []
        : [
            {
              owner: row.id,
              of: 'key' as const,
              pico: BigInt(row.limit_micros) * PICO_PER_MICRO,
              reset: row.limit_reset,
              includeByok: row.include_byok_in_limit,
            },
          ]),
      ...row.budgets.map((b) => ({
        owner: row.workspace_id,
        of: 'workspace' as const,
        pico: BigInt(b.limit_micros) * PICO_PER_MICRO,
        reset: b.interval === 'lifetime' ? null : b.interval,
        includeByok: row.include_byok_in_budgets,
      })),
      ...guardrailLimits(row),
      // Credits pay for what Roster's own provider credentials spend; BYOK spend is the workspace's own.
      ...(row.credits_micros === null
        ? []
        : [
            {
              owner: row.account_id,
              of: 'account' as const,
              pico: BigInt(row.credits_micros) * PICO_PER_MICRO,
              reset: null,
              includeByok: false,
            },
          ]),
    ],
    ioLoggingRate: row.io_logging_rate,
    disabledServerTools: row.disabled_server_tools?.length ? new Set(row.disabled_server_tools) : null,
    guardrails: ruling(row.guardrails),
    keyHash: Buffer.from(row.hash).toString('hex'),
    hasByok: row.has_byok,
  }
}

/**
 * A guardrail's limit counts against each owner it bounds (governance §8.2, per entity, not shared):
 * assigned to the key, the key's spend; to its member, the member's keys in the workspace together;
 * the workspace's default, both.
 */
function guardrailLimits(row: {
  id: string
  kind: ApiKeyKind
  workspace_id: string
  user_id: string | null
  guardrails: CallerGuardrail[]
}): SpendLimit[] {
  const limits: SpendLimit[] = []
  for (const g of row.guardrails) {
    if (g.limit_micros === null) continue
    const limit = {
      of: 'guardrail' as const,
      name: g.name,
      pico: BigInt(g.limit_micros) * PICO_PER_MICRO,
      reset: g.reset,
      includeByok: g.byok,
    }
    if (g.is_default || g.on_key) limits.push({ ...limit, owner: row.id })
    if ((g.is_default || g.on_member) && row.kind === 'user' && row.user_id)
      limits.push({ ...limit, owner: memberSpendOwner(row.workspace_id, row.user_id), member: true })
  }
  return limits
}

/** The guardrails that rule something besides spend (most keys have none: null, and no check). */
function ruling(guardrails: CallerGuardrail[]): AppliedGuardrail[] | null {
  const applied = guardrails
    .filter((g) => Object.values(g.rules).some((v) => v !== null && v !== undefined && v !== false))
    .map((g) => ({ id: g.id, name: g.name, rules: g.rules }))
  return applied.length ? applied : null
}
