import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { adminUrl, serverUrl, TEMPLATE_PREFIX, TEST_DB_PREFIX } from './env.js'
import { dockerProblem, startServiceContainers } from './containers.js'

const root = join(import.meta.dirname, '..', '..', '..')

/**
 * Where DATABASE_URL / REDIS_URL are unset and a Docker engine answers, Postgres and Redis come from
 * containers (testcontainers) for this run; otherwise the URLs given, or the standard local ports.
 * Then migrates one template database per migration set (named by the migrations' digest, so a
 * changed migration makes a fresh template) which each test file clones with CREATE DATABASE … TEMPLATE.
 */
export default async function setup() {
  const want = { postgres: !process.env.DATABASE_URL, redis: !process.env.REDIS_URL }
  let containers: Awaited<ReturnType<typeof startServiceContainers>> | undefined
  if (want.postgres || want.redis) {
    let problem = await dockerProblem()
    if (!problem) {
      try {
        containers = await startServiceContainers(want)
      } catch (err) {
        problem = `the containers could not start (${(err as Error).message.split('\n')[0]}); where no image registry is reachable, build local images (scripts/containers/build-local-images.sh) and set ROSTER_POSTGRES_IMAGE / ROSTER_REDIS_IMAGE`
      }
    }
    // `npm run test:containers` (and CI) must not fall back to local servers unnoticed.
    if (problem && process.env.ROSTER_TEST_CONTAINERS === 'require')
      throw new Error(`ROSTER_TEST_CONTAINERS=require, but the tests cannot use containers: ${problem}`)
    if (problem) process.stdout.write(`tests: the local Postgres and Redis, not containers: ${problem}\n`)
  }
  if (containers?.databaseUrl) process.env.DATABASE_URL = containers.databaseUrl
  if (containers?.redisUrl) process.env.REDIS_URL = containers.redisUrl
  if (containers)
    process.stdout.write(
      `tests: ${[containers.databaseUrl && 'Postgres', containers.redisUrl && 'Redis'].filter(Boolean).join(' and ')} in containers (testcontainers), as DATABASE_URL / REDIS_URL are unset and Docker answers\n`,
    )
  let template: string
  try {
    template = await prepareTemplate()
  } catch (err) {
    await containers?.stop()
    throw err
  }
  return async () => {
    await releaseTemplate(template).catch((err: unknown) =>
      process.stdout.write(`tests: the template database ${template} was left behind: ${(err as Error).message}\n`),
    )
    await containers?.stop()
  }
}

/** One lock for the runs' bookkeeping of a template (which runs use it), across processes. */
const TEMPLATE_LOCK = "hashtext('roster test template')"

/** The runs (process ids) a template's comment names as using it, those still alive. */
function runsOf(note: string | null): number[] {
  const listed =
    /runs ([\d,]+)/
      .exec(note ?? '')?.[1]
      ?.split(',')
      .map(Number) ?? []
  return listed.filter((pid) => {
    try {
      process.kill(pid, 0)
      return true
    } catch (err) {
      // EPERM: alive, another user's.
      return (err as NodeJS.ErrnoException).code === 'EPERM'
    }
  })
}

/**
 * Notes this run as using the template (the caller holds the lock); `npm test` then leaves no
 * database behind: the last run to finish drops it (releaseTemplate).
 */
async function claimTemplate(admin: pg.Client, template: string) {
  const { rows } = await admin.query<{ note: string | null }>(
    `SELECT shobj_description(oid, 'pg_database') AS note FROM pg_database WHERE datname = $1`,
    [template],
  )
  const runs = [...new Set([...runsOf(rows[0]?.note ?? null), process.pid])]
  await admin.query(
    `COMMENT ON DATABASE "${template}" IS 'roster test template, used ${Date.now()} runs ${runs.join(',')}'`,
  )
}

/** This run is done with the template: dropped when no other run still uses it. */
async function releaseTemplate(template: string) {
  const admin = new pg.Client({ connectionString: adminUrl() })
  await admin.connect()
  try {
    await admin.query(`SELECT pg_advisory_lock(${TEMPLATE_LOCK})`)
    const { rows } = await admin.query<{ note: string | null }>(
      `SELECT shobj_description(oid, 'pg_database') AS note FROM pg_database WHERE datname = $1`,
      [template],
    )
    if (!rows.length) return
    const others = runsOf(rows[0]!.note).filter((pid) => pid !== process.pid)
    if (others.length)
      await admin.query(
        `COMMENT ON DATABASE "${template}" IS 'roster test template, used ${Date.now()} runs ${others.join(',')}'`,
      )
    else await admin.query(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`)
  } finally {
    await admin.query(`SELECT pg_advisory_unlock(${TEMPLATE_LOCK})`).catch(() => {})
    await admin.end()
  }
}

async function prepareTemplate(): Promise<string> {
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
    // Under the runs' lock: a run finishing now cannot drop the template between this run's finding
    // it and noting that it uses it, and runs started together build it once.
    await admin.query(`SELECT pg_advisory_lock(${TEMPLATE_LOCK})`)
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
    // Leftovers of earlier runs that were killed before they could clean up. Only old ones: another
    // run may be using its databases (and its template, for another migration set) right now.
    await claimTemplate(admin, template)
    const { rows } = await admin.query<{ datname: string; note: string | null }>(
      `SELECT datname, shobj_description(oid, 'pg_database') AS note FROM pg_database
       WHERE starts_with(datname, $1) OR starts_with(datname, $2)`,
      [TEST_DB_PREFIX, TEMPLATE_PREFIX],
    )
    const now = Date.now()
    for (const { datname, note } of rows) {
      const made = /^roster_t_([0-9a-z]+)_[0-9a-f]{12}$/.exec(datname)?.[1]
      const used = /used (\d+)/.exec(note ?? '')?.[1]
      const legacy = /^roster_t_[0-9a-f]{12}$/.test(datname) // named before names carried a time
      const stale = legacy
        ? true
        : made
          ? now - parseInt(made, 36) > 3_600_000
          : datname !== template && datname.startsWith(TEMPLATE_PREFIX) && (!used || now - Number(used) > 86_400_000)
      if (stale) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => {})
    }
  } finally {
    // Ending the session releases its lock.
    await admin.end()
  }
  process.env.ROSTER_TEST_TEMPLATE = template
  return template
}
