import { spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, appendFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { freePort } from './node-process.js'

// A Postgres primary and its streaming replica, made for one test from the machine's PostgreSQL
// binaries (initdb, pg_basebackup, pg_ctl) in a directory of their own, each on a free port: a real
// replica (hot standby), whose replay the test can pause to see which reads it serves.

/** Where the machine's PostgreSQL server binaries are (Debian keeps them out of PATH). */
export function postgresBinaries(): string | undefined {
  const fromConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' })
  const candidates = [
    fromConfig.status === 0 ? fromConfig.stdout.trim() : '',
    ...(existsSync('/usr/lib/postgresql')
      ? readdirSync('/usr/lib/postgresql')
          .sort()
          .reverse()
          .map((v) => `/usr/lib/postgresql/${v}/bin`)
      : []),
  ]
  return candidates.find((d) => d && existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_basebackup')))
}

/** Postgres never runs as root: as root, the server's commands run as the `postgres` user. */
const asServer = (command: string, args: string[]) =>
  process.getuid?.() === 0
    ? { command: 'runuser', args: ['-u', 'postgres', '--', command, ...args] }
    : { command, args }

function run(bin: string, name: string, args: string[]) {
  const { command, args: full } = asServer(join(bin, name), args)
  const r = spawnSync(command, full, { encoding: 'utf8', timeout: 120_000 })
  if (r.status !== 0) throw new Error(`${name} failed: ${r.stderr || r.stdout || r.error?.message}`)
}

export interface ReplicatedPostgres {
  /** The primary's and the replica's URLs for `database`. */
  primaryUrl: string
  replicaUrl: string
  /** Stops (and resumes) the replica's replay: what the primary writes meanwhile is not read there. */
  pauseReplay(): Promise<void>
  resumeReplay(): Promise<void>
  /** Resolves once the replica has replayed everything the primary wrote so far. */
  caughtUp(): Promise<void>
  stop(): Promise<void>
}

export async function startReplicatedPostgres(database = 'roster'): Promise<ReplicatedPostgres> {
  const bin = postgresBinaries()
  if (!bin) throw new Error('PostgreSQL server binaries (initdb, pg_basebackup) are not installed')
  const dir = mkdtempSync(join(tmpdir(), 'roster-replica-'))
  if (process.getuid?.() === 0) {
    const { uid, gid } = userIds('postgres')
    chownSync(dir, uid, gid)
  }
  const [p1, p2] = [await freePort(), await freePort()]
  const primary = join(dir, 'primary')
  const replica = join(dir, 'replica')
  run(bin, 'initdb', ['-D', primary, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
  const settings = [
    `port = ${p1}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${dir}'`,
    'wal_level = replica',
    'max_wal_senders = 4',
    'hot_standby = on',
    'fsync = off',
    'synchronous_commit = off',
    'full_page_writes = off',
  ]
  appendFileSync(primary + '/postgresql.conf', settings.join('\n') + '\n')
  run(bin, 'pg_ctl', ['-D', primary, '-l', join(dir, 'primary.log'), '-w', 'start'])
  const primaryUrl = (db: string) => `postgresql://postgres@127.0.0.1:${p1}/${db}`
  const admin = new pg.Client({ connectionString: primaryUrl('postgres') })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${database}`)
  await admin.end()
  run(bin, 'pg_basebackup', [
    '-h',
    '127.0.0.1',
    '-p',
    String(p1),
    '-U',
    'postgres',
    '-D',
    replica,
    '-R',
    '-X',
    'stream',
    '-c',
    'fast',
  ])
  appendFileSync(replica + '/postgresql.conf', `port = ${p2}\n`)
  run(bin, 'pg_ctl', ['-D', replica, '-l', join(dir, 'replica.log'), '-w', 'start'])
  const replicaUrl = `postgresql://postgres@127.0.0.1:${p2}/${database}`
  const onReplica = async (sql: string) => {
    const c = new pg.Client({ connectionString: replicaUrl })
    await c.connect()
    try {
      return (await c.query(sql)).rows
    } finally {
      await c.end()
    }
  }
  return {
    primaryUrl: primaryUrl(database),
    replicaUrl,
    pauseReplay: async () => void (await onReplica('SELECT pg_wal_replay_pause()')),
    resumeReplay: async () => void (await onReplica('SELECT pg_wal_replay_resume()')),
    async caughtUp() {
      const c = new pg.Client({ connectionString: primaryUrl('postgres') })
      await c.connect()
      const { lsn } = (await c.query('SELECT pg_current_wal_insert_lsn()::text AS lsn')).rows[0] as { lsn: string }
      await c.end()
      for (let i = 0; i < 200; i++) {
        const [row] = (await onReplica(`SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS done`)) as {
          done: boolean
        }[]
        if (row?.done) return
        await new Promise((r) => setTimeout(r, 50))
      }
      throw new Error('the replica did not catch up within 10 s')
    },
    async stop() {
      for (const d of [replica, primary]) {
        const { command, args } = asServer(join(bin, 'pg_ctl'), ['-D', d, '-m', 'immediate', 'stop'])
        spawnSync(command, args, { stdio: 'ignore', timeout: 60_000 })
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

function userIds(name: string): { uid: number; gid: number } {
  const r = spawnSync('id', ['-u', name], { encoding: 'utf8' })
  const g = spawnSync('id', ['-g', name], { encoding: 'utf8' })
  if (r.status !== 0 || g.status !== 0) throw new Error(`no ${name} user to run Postgres as`)
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) }
}
