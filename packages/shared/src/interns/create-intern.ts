import { randomUUID } from 'node:crypto'
import { AppError, isAppError } from '@roster/protocol'
import { isUniqueViolation, type Db } from '../db.js'
import type { Caller } from '../caller.js'
import type { CreateInternRequest, Intern } from '@roster/protocol'
import { toIntern } from './view.js'
import type { AfterCommit } from './lifecycle.js'
import type { VaultService } from '../vault/local-vault.js'
import { canonicalJson, sha256 } from '@roster/protocol'
import { Jobs } from '@roster/protocol'
import { activeCarrier } from '@roster/platform'
import { assertOwnWorkspace, nameTaken } from './access.js'
import {
  forgetDeletedCreate,
  idempotencyRecord,
  insertOne,
  insertOneInTx,
  refusedReason,
  type PreparedCreate,
} from '../repositories/interns.js'
import type { CreateBatcher } from './create-batcher.js'
import { sealSlackSecrets } from '../slack/sealed-credentials.js'
import { insertSlackLink } from '../repositories/slack-links.js'
import type { MintedSlackApp } from '../slack/slack-apps-api.js'

/** Makes a Slack-linked intern its own app with its workspace's configuration token, and deletes one. */
export interface SlackAppMinter {
  mint(intern: { id: string; name: string; description: string | null; workspaceId: string }): Promise<MintedSlackApp>
  /** Best effort: an app made for a create that did not happen. */
  drop(workspaceId: string, appId: string): Promise<void>
}

export interface CreateInternDeps {
  db: Db
  vault: VaultService
  internLimitPerMember: number
  /** Group commit under concurrency; without it every create is its own statement. */
  batcher?: CreateBatcher
  /** Told after the create committed (the relay woken when it queued provisioning; readers told). */
  after: AfterCommit
  /** Seals a Slack-linked intern's app credentials (absent: Slack links are refused). */
  masterKey?: Buffer
  /** Mints the app of a Slack link that names none (absent: such links are refused). */
  slackApps?: SlackAppMinter
}

export interface CreateInternResult {
  /** 201 for a new intern, 200 for the replay of a finished create. */
  status: 201 | 200
  intern: Intern
}

/**
 * Creates an intern with its private vault, the borrowed-vault attachment and (when provisioning)
 * the outbox message, atomically, in one SQL statement (insertOne in repositories/interns.ts). Everything the
 * statement needs (ids, the idempotency key and fingerprint, the sealed vault key) is decided
 * first, so the write itself is one round trip, possibly shared with concurrent creates.
 *
 * Idempotency: the key is the Idempotency-Key header, or one derived from the canonical body. A
 * create that finds its key claimed replays the intern of the first (200), or is refused when the
 * body differs (409 idempotency_key_reused).
 */
export async function createIntern(
  deps: CreateInternDeps,
  caller: Caller,
  body: CreateInternRequest,
  idempotencyKey: string | undefined,
): Promise<CreateInternResult> {
  const userId = caller.userId
  if (!userId) throw new AppError('no_acting_user', 'this key acts for no member')
  assertOwnWorkspace(caller, body.workspace_id)
  const request = { ...body, workspace_id: caller.workspaceId }
  const slack = body.slack
  if (slack && !deps.masterKey)
    throw new AppError('configuration_error', 'Slack links need VAULT_MASTER_KEY to seal the app credentials')
  const fingerprint = sha256('POST /interns', canonicalJson(request))
  const internId = randomUUID()
  const job = { internId, generation: 1 }
  const trace = activeCarrier()
  const prepared: PreparedCreate = {
    keyId: caller.keyId,
    key: idempotencyKey ?? `derived:${fingerprint.toString('hex')}`,
    fingerprint,
    internId,
    vault: await deps.vault.newVault(deps.db),
    workspaceId: caller.workspaceId,
    userId,
    name: request.name,
    description: request.description ?? null,
    instructions: request.instructions ?? null,
    // A Slack-linked intern waits for its install; the intent to provision is kept on its link.
    status: slack ? 'awaiting_slack_install' : request.provision ? 'queued' : 'stopped',
    generation: request.provision && !slack ? 1 : 0,
    borrow: request.vault_id ?? null,
    provision: request.provision && !slack,
    jobId: Jobs['intern.provision'].jobId(job),
    job,
    trace: trace && JSON.stringify(trace),
  }

  // A link naming no app gets one minted: after a replay is ruled out (no app made for nothing).
  let minted: MintedSlackApp | undefined
  if (slack && !slack.app) {
    if (await idempotencyRecord(deps.db, prepared.keyId, prepared.key, prepared.fingerprint))
      return replayOrAgain(deps, caller, body, idempotencyKey, prepared)
    if (!deps.slackApps)
      throw new AppError('slack_not_configured', 'this server mints no Slack apps: give slack.app (docs/slack.md)')
    minted = await deps.slackApps.mint({
      id: internId,
      name: prepared.name,
      description: prepared.description,
      workspaceId: prepared.workspaceId,
    })
  }
  const app =
    slack?.app ??
    (minted && { client_id: minted.clientId, client_secret: minted.clientSecret, signing_secret: minted.signingSecret })

  let outcome
  try {
    outcome =
      slack && app
        ? // The intern and its link in one transaction: never an intern awaiting an install it has no link for.
          await deps.db.$transaction(async (tx) => {
            const made = await insertOneInTx(tx, prepared, deps.internLimitPerMember)
            if (made.outcome === 'created')
              await insertSlackLink(tx, {
                internId,
                origin: minted ? 'minted' : 'team',
                appId: minted?.appId ?? null,
                clientId: app.client_id,
                provisionOnInstall: request.provision,
                approvers: slack.approvers ?? [],
                sealed: sealSlackSecrets(deps.masterKey!, internId, {
                  client_secret: app.client_secret,
                  signing_secret: app.signing_secret,
                }),
              })
            return made
          })
        : await (deps.batcher ? deps.batcher.submit(prepared) : insertOne(deps.db, prepared, deps.internLimitPerMember))
  } catch (err) {
    if (minted) await deps.slackApps!.drop(prepared.workspaceId, minted.appId)
    throw refusal(err, prepared, deps.internLimitPerMember) ?? err
  }
  if (minted && outcome.outcome !== 'created') await deps.slackApps!.drop(prepared.workspaceId, minted.appId)
  if (outcome.outcome === 'created') {
    if (prepared.provision) deps.after.outboxWritten()
    deps.after.internsChanged([outcome.intern.id])
    return { status: 201, intern: toIntern(outcome.intern) }
  }
  return replayOrAgain(deps, caller, body, idempotencyKey, prepared)
}

/**
 * The first create's intern again; or, when the key was derived from the body (none was sent) and
 * its intern has since been deleted, the create made anew: a derived key never outlives the intern
 * it made (the same create sent after a delete creates).
 */
async function replayOrAgain(
  deps: CreateInternDeps,
  caller: Caller,
  body: CreateInternRequest,
  idempotencyKey: string | undefined,
  p: PreparedCreate,
): Promise<CreateInternResult> {
  const replayed = await replay(deps.db, p, idempotencyKey === undefined)
  return replayed === 'forgotten' ? createIntern(deps, caller, body, idempotencyKey) : replayed
}

function refusal(err: unknown, p: PreparedCreate, limit: number): AppError | undefined {
  if (isAppError(err)) return err
  if (isUniqueViolation(err)) return nameTaken(p.name)
  const reason = refusedReason(err)
  if (reason === 'intern_limit_reached') {
    return new AppError(reason, `this member already has ${limit} interns, the most allowed per member`)
  }
  if (reason === 'vault_not_attachable') {
    return new AppError(
      reason,
      `vault ${p.borrow} is not owned by a live intern of this workspace, so it cannot be attached`,
    )
  }
  return undefined
}

async function replay(db: Db, p: PreparedCreate, derived: boolean): Promise<CreateInternResult | 'forgotten'> {
  const record = await idempotencyRecord(db, p.keyId, p.key, p.fingerprint)
  // Forgotten between the claim and this read (a concurrent create after a delete): made anew.
  if (!record) {
    if (derived) return 'forgotten'
    throw new Error('idempotency record vanished while replaying')
  }
  if (!record.matches) {
    throw new AppError('idempotency_key_reused', 'this Idempotency-Key was already used with a different request')
  }
  if (!record.intern) {
    if (derived) {
      await forgetDeletedCreate(db, p.keyId, p.key)
      return 'forgotten'
    }
    throw new AppError('not_found', 'the intern created with this Idempotency-Key has since been deleted')
  }
  return { status: 200, intern: toIntern(record.intern) }
}
