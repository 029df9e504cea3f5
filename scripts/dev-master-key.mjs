// The vault master key `npm start` uses when VAULT_MASTER_KEY is unset. The key belongs to the
// database whose vaults it seals, not to a checkout: a second clone, a deleted .roster/ or a
// teammate's checkout on the same database must find it. So generated keys live in the user's
// configuration directory (never in the database), one per database, and the key chosen is the
// one that opens the database's vaults.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import pg from 'pg'
import { masterKeyFingerprint } from '../packages/shared/dist/vault/seal.js'

/** Where generated keys are kept: $XDG_CONFIG_HOME/roster (else ~/.config/roster), readable by the user alone. */
export function keyStorePath(env = process.env) {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config')
  return join(base, 'roster', 'vault-master-keys.json')
}

/** A database as the key store names it: its URL without password or options (`postgresql://user@host:port/db`). */
export function databaseIdentity(url) {
  const u = new URL(url)
  const user = decodeURIComponent(u.username || 'postgres')
  return `postgresql://${user}@${u.hostname.toLowerCase()}:${u.port || '5432'}${u.pathname}`
}

function readStore(path) {
  if (!existsSync(path)) return {}
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8'))
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {}
  } catch {
    throw new Error(
      `${path} is not readable as JSON; fix or remove it (it holds the vault master keys npm start generated)`,
    )
  }
}

function writeStore(path, store) {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  writeFileSync(path, JSON.stringify(store, null, 2) + '\n', { mode: 0o600 })
}

const isKey = (v) => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v)

/**
 * The development master key for `databaseUrl`: the known key that opens its vaults when it has
 * any (this database's entry first, then a checkout's old `.roster/vault-master-key`, then the
 * user's other entries), else this database's entry, else a new one. Whatever is chosen is kept
 * under this database's name. Throws, naming the fix, when the database's vaults were sealed by a
 * key this user does not have.
 */
export async function devMasterKey({ databaseUrl, env = process.env, legacyFile }) {
  const path = keyStorePath(env)
  const store = readStore(path)
  const identity = databaseIdentity(databaseUrl)
  const legacy = legacyFile && existsSync(legacyFile) ? readFileSync(legacyFile, 'utf8').trim() : undefined
  const candidates = [...new Set([store[identity], legacy, ...Object.values(store)].filter(isKey))]

  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  let sealedBy
  try {
    sealedBy = (await client.query('SELECT fingerprint FROM vault_master_keys')).rows.map((r) =>
      Buffer.from(r.fingerprint),
    )
  } finally {
    await client.end()
  }

  let key
  let generated = false
  // A database with no vaults yet takes its own key (or the checkout's old one); one with vaults, the key that opens them.
  if (sealedBy.length === 0) key = [store[identity], legacy].find(isKey)
  else key = candidates.find((k) => sealedBy.some((f) => f.equals(masterKeyFingerprint(Buffer.from(k, 'hex')))))
  if (!key && sealedBy.length > 0) {
    throw new Error(
      `the vaults in ${identity} were sealed by a vault master key this user does not have (none of ${candidates.length} in ${path} opens them). ` +
        'Start with VAULT_MASTER_KEY set to the key that sealed them (ask whoever first ran Roster on this database), ' +
        'or point DATABASE_URL at another database (a development database can be dropped: npm start makes it anew).',
    )
  }
  if (!key) {
    key = randomBytes(32).toString('hex')
    generated = true
  }
  if (store[identity] !== key) writeStore(path, { ...store, [identity]: key })
  return { key, path, identity, generated }
}
