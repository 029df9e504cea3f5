import { randomUUID } from 'node:crypto'
import { AppError, isAppError } from '../errors.js'
import { isUniqueViolation, Prisma, type Db } from '../db.js'
import type { Caller } from '../caller.js'
import type { CreateInternRequest, Intern } from '../contracts/interns.js'
import type { VaultService } from '../vault/local-vault.js'
import { canonicalJson, sha256 } from '../canonical-json.js'
import { Jobs } from '../jobs.js'
import { enqueueInTx } from '../outbox.js'
import { toIntern, type InternRow } from './view.js'

export interface CreateInternDeps {
  db: Db
  vault: VaultService
  internLimitPerMember: number
  /** The route's deadline; the transaction never outlives it. */
  deadlineMs: number
}

export interface CreateInternResult {
  /** 201 for a new intern, 200 for the replay of a finished create. */
  status: 201 | 200
  intern: Intern
}

/**
 * Creates an intern, its private vault, the borrowed-vault attachment and (when provisioning) the
 * outbox message, in one transaction that also claims the idempotency key.
 *
 * Concurrency: the idempotency row is inserted first. A second request with the same key blocks on
 * that insert until the first commits, then finds the row and replays it; if the first rolled back,
 * the second proceeds as the creator. So one key never makes two interns, and a failed attempt
 * (502, 408, a crash) leaves nothing behind for the retry to trip over.
 */
export async function createIntern(
  deps: CreateInternDeps,
  caller: Caller,
  body: CreateInternRequest,
  idempotencyKey: string | undefined,
): Promise<CreateInternResult> {
  const userId = caller.userId
  if (!userId) throw new AppError('no_acting_user', 'this key acts for no member')
  if (body.workspace_id !== undefined && body.workspace_id !== caller.workspaceId) {
    throw new AppError('not_found', `workspace ${body.workspace_id} is not the workspace of this API key`)
  }
  const request = { ...body, workspace_id: caller.workspaceId }
  const fingerprint = sha256('POST /interns', canonicalJson(request))
  const key = idempotencyKey ?? `derived:${fingerprint.toString('hex')}`
  const internId = randomUUID()

  try {
    return await deps.db.$transaction(
      async (tx) => {
        const claimed = await tx.$executeRaw`
          INSERT INTO idempotency_records (api_key_id, key, fingerprint, intern_id)
          VALUES (${caller.keyId}::uuid, ${key}, ${fingerprint}, ${internId}::uuid)
          ON CONFLICT DO NOTHING`
        if (claimed === 0) return replay(tx, caller.keyId, key, fingerprint)

        await enforceInternLimit(tx, userId, caller.workspaceId, deps.internLimitPerMember)
        if (request.vault_id) await assertVaultAttachable(tx, request.vault_id, caller.workspaceId)
        const vaultId = await deps.vault.createVault(tx, caller.workspaceId)
        const row = await tx.intern.create({
          data: {
            id: internId,
            workspaceId: caller.workspaceId,
            creatorUserId: userId,
            name: request.name,
            description: request.description ?? null,
            instructions: request.instructions ?? null,
            status: request.provision ? 'queued' : 'stopped',
            provisionGeneration: request.provision ? 1 : 0,
            vaultId,
            attachedVaultId: request.vault_id ?? null,
          },
        })
        if (request.provision) {
          const payload = { internId, generation: 1 }
          await enqueueInTx(tx, 'intern.provision', Jobs['intern.provision'].jobId(payload), payload)
        }
        return { status: 201 as const, intern: toIntern(row) }
      },
      { timeout: deps.deadlineMs, maxWait: deps.deadlineMs },
    )
  } catch (err) {
    if (isAppError(err)) throw err
    if (isUniqueViolation(err)) {
      throw new AppError('name_taken', `an intern named "${request.name}" already exists in this workspace`)
    }
    throw err
  }
}

async function replay(tx: Prisma.TransactionClient, keyId: string, key: string, fingerprint: Buffer) {
  const record = await tx.idempotencyRecord.findUnique({ where: { apiKeyId_key: { apiKeyId: keyId, key } } })
  if (!record) throw new Error('idempotency record vanished while replaying')
  if (!Buffer.from(record.fingerprint).equals(fingerprint)) {
    throw new AppError('idempotency_key_reused', 'this Idempotency-Key was already used with a different request')
  }
  const row: InternRow | null = await tx.intern.findUnique({ where: { id: record.internId } })
  if (!row) throw new AppError('not_found', 'the intern created with this Idempotency-Key has since been deleted')
  return { status: 200 as const, intern: toIntern(row) }
}

/**
 * Serialises one member's creates on their user row, so concurrent creates cannot overshoot the
 * limit. The count must be a separate statement: under READ COMMITTED a statement's snapshot is
 * taken before it waits for the lock, so a count in the locking statement would miss the rows
 * committed by the transaction it waited for.
 */
async function enforceInternLimit(tx: Prisma.TransactionClient, userId: string, workspaceId: string, limit: number) {
  await tx.$executeRaw`SELECT 1 FROM users WHERE id = ${userId}::uuid FOR UPDATE`
  const rows = await tx.$queryRaw<{ owned: number }[]>`
    SELECT count(*)::int AS owned FROM interns WHERE creator_user_id = ${userId}::uuid AND workspace_id = ${workspaceId}::uuid`
  if ((rows[0]?.owned ?? 0) >= limit) {
    throw new AppError('intern_limit_reached', `this member already has ${limit} interns, the most allowed per member`)
  }
}

async function assertVaultAttachable(tx: Prisma.TransactionClient, vaultId: string, workspaceId: string) {
  const owners = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM interns
    WHERE vault_id = ${vaultId}::uuid AND workspace_id = ${workspaceId}::uuid
      AND status NOT IN ('destroying', 'destroy_failed')
    FOR SHARE`
  if (owners.length === 0) {
    throw new AppError(
      'vault_not_attachable',
      `vault ${vaultId} is not owned by a live intern of this workspace, so it cannot be attached`,
    )
  }
}
