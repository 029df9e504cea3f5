import { AppError } from '@roster/protocol'
import type { Db } from './db.js'
import { PICO_PER_MICRO, usdOfPico } from '@roster/protocol'
import { MAX_KEY_LIMIT_USD } from './managed-keys.js'
import { accountCredits, addCredits, updateCredits } from './repositories/accounts.js'
import { spendOf } from './repositories/generations.js'

// An account's credits (`client.credits`, governance-contract.md §7): what an operator granted, and
// what the account's generations used of them. Self-hosters need no credits: an account has none
// set (unlimited) until an operator grants some, and only then is it refused past them (402).

/** What an unlimited account reports as its credits: a finite number (the client requires one), as large as any grant. */
export const UNLIMITED_CREDITS_USD = MAX_KEY_LIMIT_USD

/** GET /credits' data: credits granted and used, in USD; `unlimited` says the credits are no bound. */
export async function creditsView(db: Db, accountId: string) {
  const granted = await accountCredits(db, accountId)
  if (granted === undefined) throw new AppError('not_found', `no account ${accountId}`)
  const used = (await spendOf(db, accountId, ['all'])).get('all')?.credits ?? 0n
  return {
    total_credits: granted === null ? UNLIMITED_CREDITS_USD : usdOfPico(granted * PICO_PER_MICRO),
    total_usage: usdOfPico(used),
    unlimited: granted === null,
  }
}

const MAX_MICROS = BigInt(MAX_KEY_LIMIT_USD) * 1_000_000n

/** USD as micro-dollars, refused unless a finite amount from 0 to MAX_KEY_LIMIT_USD. */
function microsOf(usd: number, what: string): bigint {
  if (!Number.isFinite(usd) || usd < 0 || usd > MAX_KEY_LIMIT_USD)
    throw new AppError('invalid_body', `${what} must be a number of USD from 0 to ${MAX_KEY_LIMIT_USD}`)
  return BigInt(Math.round(usd * 1e6))
}

/**
 * The operator's grant (`admin account credits`): `set` replaces the credits, `add` adds to them (to
 * an unlimited account: a grant of that much), `unlimited` removes the bound. Answers the new view.
 */
export async function grantCredits(
  db: Db,
  accountId: string,
  change: { set: number } | { add: number } | { unlimited: true } | null,
) {
  if (change !== null) {
    let found: boolean
    if ('unlimited' in change) found = await updateCredits(db, accountId, null)
    else if ('set' in change) found = await updateCredits(db, accountId, microsOf(change.set, '--set'))
    else if (!(await addCredits(db, accountId, microsOf(change.add, '--add'), MAX_MICROS))) {
      if ((await accountCredits(db, accountId)) !== undefined)
        throw new AppError('invalid_body', `credits cannot pass ${MAX_KEY_LIMIT_USD} USD`)
      found = false
    } else found = true
    if (!found) throw new AppError('not_found', `no account ${accountId}`)
  }
  return { account_id: accountId, ...(await creditsView(db, accountId)) }
}
