import { z } from 'zod'
import type { Db } from './db.js'
import { AppError } from '@roster/protocol'
import { managesAccount, ownOnly, type Caller } from './caller.js'
import { canonicalGenerationId, clientGenerationId, generationView, type GenerationRow } from '@roster/protocol'
import { generationById, generationPage } from './repositories/generations.js'
import { cursorOf, readCursor } from './page-cursor.js'
import { keyIdsOf, keyNames } from './repositories/generation-rollups.js'

// GET /generations (Roster's, beside the client's GET /generation?id=): an account's generations
// searched on the server, newest first, with a cursor. A management key searches the account's;
// any other key its own calls only. Filters: one id, a session, a key (its hash or number), a
// model, a time range [from, to) (as the console's spend chart opens the calls behind a bar), and
// the calls that failed. Each with its key's number and name and the id its client got.

const When = z.iso.datetime({ offset: true }).transform((s) => new Date(s))

export const ListGenerationsQuery = z.strictObject({
  id: z.string().min(1).max(200).optional(),
  session_id: z.string().min(1).max(256).optional(),
  key: z
    .string()
    .regex(/^([0-9a-f]{64}|\d{1,18})$/i, 'a key’s hash (64 hex digits) or its number')
    .optional(),
  model: z.string().min(1).max(256).optional(),
  from: When.optional(),
  to: When.optional(),
  /** `error`: only the calls that failed. */
  status: z.enum(['error'], 'is error').optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(200).optional(),
})
export type ListGenerationsQuery = z.infer<typeof ListGenerationsQuery>

/** A generation as the list shows it: with its key's number and name, and the id its client got. */
type Listed = ReturnType<typeof generationView> & {
  api_key_number: number | null
  api_key_name: string | null
  client_id: string
}

const listed = (row: GenerationRow, keyNumber: number | null, keyName: string | null): Listed => ({
  ...generationView(row),
  api_key_number: keyNumber,
  api_key_name: keyName,
  client_id: clientGenerationId(row.id, row.door),
})

export async function listGenerations(db: Db, caller: Caller, q: ListGenerationsQuery) {
  if (q.from && q.to && !(q.from < q.to)) throw new AppError('invalid_body', 'from must be before to')
  const accountId = caller.accountId
  const manages = managesAccount(caller)
  // A member signed in as themselves sees the calls of all their keys; any other key its own.
  const member = ownOnly(caller)
  let keyId = manages || member ? undefined : caller.keyId
  if (q.key !== undefined) {
    if (!manages)
      throw new AppError('management_key_required', 'searching another key’s generations needs a management key')
    const ref = q.key.toLowerCase()
    const found = await keyIdsOf(db, accountId, {
      numbers: /^\d+$/.test(ref) ? [BigInt(ref)] : [],
      hashes: ref.length === 64 ? [Buffer.from(ref, 'hex')] : [],
    })
    // A key of no key of this account: nothing to find (not an error: ids are not confirmed to strangers).
    if (!found[0]) return { data: [] as Listed[], has_more: false }
    keyId = found[0].id
  }
  if (q.id !== undefined) {
    const row = await generationById(db, accountId, canonicalGenerationId(q.id))
    if (!row || (keyId !== undefined && row.key_id !== keyId) || (member !== undefined && row.user_id !== member))
      return { data: [] as Listed[], has_more: false }
    if (q.status === 'error' && row.finish_reason !== 'error') return { data: [] as Listed[], has_more: false }
    const key = row.key_id ? (await keyNames(db, [row.key_id])).get(row.key_id) : undefined
    return { data: [listed(row, key?.number ?? null, key?.name ?? null)], has_more: false }
  }
  const rows = await generationPage(db, {
    accountId,
    keyId,
    userId: member,
    sessionId: q.session_id,
    model: q.model,
    from: q.from,
    to: q.to,
    after: q.cursor === undefined ? undefined : readCursor(q.cursor),
    failed: q.status === 'error',
    limit: q.limit,
  })
  const page = rows.slice(0, q.limit)
  const last = page.at(-1)
  const has_more = rows.length > q.limit
  return {
    data: page.map((r) => listed(r, r.key_number === null ? null : Number(r.key_number), r.key_name)),
    has_more,
    ...(has_more && last ? { next_cursor: cursorOf(last.created_at, last.id) } : {}),
  }
}
