import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { adminUrl, serverUrl, TEMPLATE_PREFIX } from './env.js'

const root = join(import.meta.dirname, '..', '..', '..')

/**
 * Migrates one template database per migration set (named by the migrations' digest, so a changed
 * migration makes a fresh template) which each test file clones with CREATE DATABASE … TEMPLATE.
 */
export default async function setup() {
  const migrations = join(root, 'prisma', 'migrations')
  const digest = createHash('sha256')
  for (const dir of readdirSync(migrations).sort()) {
    if (dir.endsWith('.prisma')) continue
    try {
      digest.update(dir).update(readFileSync(join(migrations, dir, 'migration.sql')))
    } catch {}
  }
  const template = `${TEMPLATE_PREFIX}${digest.digest('hex').slice(0, 12)}`
  const admin = new pg.Client({ connectionString: adminUrl() })
  await admin.connect()
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template])
    if (!exists.rowCount) {
      const { deploy } = await import(join(root, 'prisma', 'migrate.mjs'))
      const building = `${template}_building_${process.pid}`
      await deploy(serverUrl(building))
      await admin.query(`ALTER DATABASE "${building}" RENAME TO "${template}"`).catch(async (err) => {
        await admin.query(`DROP DATABASE IF EXISTS "${building}"`)
        if (err.code !== '42P04') throw err
      })
    }
    // Leftovers of earlier runs that were killed before they could clean up.
    const stale = await admin.query(
      `SELECT datname FROM pg_database WHERE datname ~ '^roster_t_[0-9a-f]{12}$' OR (starts_with(datname, $1) AND datname <> $2)`,
      [TEMPLATE_PREFIX, template],
    )
    for (const { datname } of stale.rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`)
  } finally {
    await admin.end()
  }
  process.env.ROSTER_TEST_TEMPLATE = template
}
