#!/usr/bin/env node
// Offline migration runner. Prisma's CLI downloads a native schema engine for `migrate`; the same
// engine ships on npm as WebAssembly (@prisma/schema-engine-wasm), which we drive through the
// pg driver adapter. Migrations keep Prisma's layout and `_prisma_migrations` bookkeeping, so
// `prisma migrate deploy` works interchangeably wherever the native binary is available.
//
//   node prisma/migrate.mjs deploy          create the database if missing, apply pending migrations
//   node prisma/migrate.mjs new <name>      write prisma/migrations/<timestamp>_<name>/migration.sql
//                                           from the difference between the migrations and the schema
import { readFile, readdir, mkdir, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createRequire } from 'node:module'
import pg from 'pg'

const require = createRequire(import.meta.url)
const here = dirname(fileURLToPath(import.meta.url))
const migrationsDir = join(here, 'migrations')
const schemaPath = join(here, 'schema.prisma')
export const defaultDatabaseUrl = 'postgresql://postgres@127.0.0.1:5432/roster'

// Discrete fields, not a connectionString: the adapter derives the shadow database's pool by
// overriding `database`, which a connectionString would silently take precedence over.
// allowExitOnIdle lets a one-shot command end as soon as its work is done.
function poolConfig(databaseUrl) {
  const url = new URL(databaseUrl)
  return {
    host: url.searchParams.get('host') ?? url.hostname,
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username) || undefined,
    password: decodeURIComponent(url.password) || undefined,
    database: decodeURIComponent(url.pathname.slice(1)),
    max: 2,
    idleTimeoutMillis: 100,
    allowExitOnIdle: true,
  }
}

// The wasm module may be started once per process; later engines reuse it.
let wasmModule
async function schemaEngineModule() {
  wasmModule ??= (async () => {
    const bg = await import('@prisma/schema-engine-wasm/schema_engine_bg')
    const wasmPath = require.resolve('@prisma/schema-engine-wasm/schema_engine_bg').replace(/\.js$/, '.wasm')
    const { instance } = await WebAssembly.instantiate(await readFile(wasmPath), { './schema_engine_bg.js': bg })
    bg.__wbg_set_wasm(instance.exports)
    instance.exports.__wbindgen_start()
    return bg
  })()
  return wasmModule
}

async function loadEngine(databaseUrl) {
  const bg = await schemaEngineModule()
  const { PrismaPg } = await import('@prisma/adapter-pg')
  const { bindMigrationAwareSqlAdapterFactory } = await import('@prisma/driver-adapter-utils')
  const schema = await readFile(schemaPath, 'utf8')
  // The engine never releases its connections; track them so a run can end cleanly.
  const base = new PrismaPg(poolConfig(databaseUrl))
  const opened = []
  const track = (connect) => async () => {
    const a = await connect()
    // The pg adapter runs scripts by splitting them on ';', which breaks dollar-quoted function
    // bodies. Send each script whole, as Prisma's native engine does (simple query protocol).
    a.executeScript = async (script) => {
      try {
        await a.client.query(script)
      } catch (error) {
        a.onError(error)
      }
    }
    opened.push(a)
    return a
  }
  const factory = {
    adapterName: base.adapterName,
    provider: base.provider,
    connect: track(() => base.connect()),
    connectToShadowDb: track(() => base.connectToShadowDb()),
  }
  const engine = await bg.SchemaEngine.new(
    { datamodels: [[schemaPath, schema]] },
    () => {},
    bindMigrationAwareSqlAdapterFactory(factory),
  )
  const close = async () => {
    engine.free()
    await Promise.all(opened.map((a) => a.dispose().catch(() => {})))
  }
  return { engine, schema, close }
}

async function migrationList() {
  const names = existsSync(migrationsDir)
    ? (await readdir(migrationsDir, { withFileTypes: true }))
        .filter((d) => d.isDirectory())
        .map((d) => d.name)
        .sort()
    : []
  const lockPath = join(migrationsDir, 'migration_lock.toml')
  return {
    baseDir: migrationsDir,
    lockfile: { path: lockPath, content: existsSync(lockPath) ? await readFile(lockPath, 'utf8') : null },
    shadowDbInitScript: '',
    migrationDirectories: await Promise.all(
      names.map(async (name) => {
        const path = join(migrationsDir, name, 'migration.sql')
        return {
          path: name,
          migrationFile: { path: 'migration.sql', content: { tag: 'ok', value: await readFile(path, 'utf8') } },
        }
      }),
    ),
  }
}

const noFilter = { externalTables: [], externalEnums: [] }

/** Creates the database named in the URL when it does not exist yet. */
export async function ensureDatabase(databaseUrl) {
  const url = new URL(databaseUrl)
  const name = decodeURIComponent(url.pathname.slice(1))
  if (!name) throw new Error('DATABASE_URL names no database')
  const admin = new URL(databaseUrl)
  admin.pathname = '/postgres'
  const client = new pg.Client({ connectionString: admin.toString() })
  await client.connect()
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    if (!rowCount) {
      await client.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`).catch((err) => {
        if (err.code !== '42P04') throw err // created meanwhile by someone else
      })
      return true
    }
    return false
  } finally {
    await client.end()
  }
}

/** Applies pending migrations; returns the names of those applied now. */
export async function deploy(databaseUrl) {
  await ensureDatabase(databaseUrl)
  const { engine, close } = await loadEngine(databaseUrl)
  try {
    const out = await engine.applyMigrations({ migrationsList: await migrationList(), filters: noFilter })
    return out.appliedMigrationNames
  } finally {
    await close()
  }
}

/**
 * Writes a new migration holding the difference between the schema the migrations produce and the
 * current schema. The wasm engine cannot describe a live Postgres schema (it fails on the internal
 * "char" type), so instead of replaying migrations into a shadow database we diff two datamodels:
 * migrations/schema.snapshot.prisma records the schema as of the latest migration.
 */
export async function createMigration(databaseUrl, name) {
  await ensureDatabase(databaseUrl)
  const { engine, schema, close } = await loadEngine(databaseUrl)
  try {
    const snapshotPath = join(migrationsDir, 'schema.snapshot.prisma')
    const from = existsSync(snapshotPath)
      ? { tag: 'schemaDatamodel', files: [{ path: schemaPath, content: await readFile(snapshotPath, 'utf8') }] }
      : { tag: 'empty' }
    const to = { tag: 'schemaDatamodel', files: [{ path: schemaPath, content: schema }] }
    const { stdout } = await engine.diff({ from, to, script: true, exitCode: null, filters: noFilter })
    if (!stdout || /^-- This is an empty migration/.test(stdout.trim())) return null
    const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14)
    const dir = join(migrationsDir, `${stamp}_${name}`)
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, 'migration.sql'), stdout)
    await writeFile(snapshotPath, schema)
    const lock = join(migrationsDir, 'migration_lock.toml')
    if (!existsSync(lock)) {
      await writeFile(
        lock,
        '# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "postgresql"\n',
      )
    }
    return dir
  } finally {
    await close()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [command, name] = process.argv.slice(2)
  const databaseUrl = process.env.DATABASE_URL || defaultDatabaseUrl
  try {
    if (command === 'deploy') {
      const applied = await deploy(databaseUrl)
      const db = new URL(databaseUrl).pathname.slice(1)
      console.log(
        applied.length
          ? `applied ${applied.length} migration(s) to ${db}: ${applied.join(', ')}`
          : `${db} is up to date`,
      )
    } else if (command === 'new' && name && /^[a-z0-9_]+$/.test(name)) {
      const dir = await createMigration(databaseUrl, name)
      console.log(dir ? `wrote ${dir}/migration.sql` : 'schema and migrations agree; nothing to write')
    } else {
      console.error('usage: migrate.mjs deploy | new <snake_case_name>')
      process.exit(2)
    }
  } catch (err) {
    console.error(`migration failed: ${err?.message ?? err}`)
    process.exit(1)
  }
  // The wasm engine leaves a handle open; the work is done, so don't wait for it.
  process.exit(0)
}
