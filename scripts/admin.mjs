#!/usr/bin/env node
// `npm run -s admin -- …`: the operator CLI. Runs the built CLI, building first when needed, so a
// newcomer can use it straight after `npm ci`. The CLI runs in this process (it reads the same
// argv past the script's name and exits with its own code): a second Node cost every command ~0.6 s.
import { existsSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { dirname, join } from 'node:path'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const cli = join(root, 'apps', 'cli', 'dist', 'main.js')
if (!existsSync(cli)) {
  const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] })
  if (build.status !== 0) process.exit(build.status ?? 1)
}
// Sealing a Slack configuration token needs the API's vault master key: without VAULT_MASTER_KEY,
// the development key `npm start` uses for this database (scripts/dev-master-key.mjs).
const argv = process.argv.slice(2)
if (!process.env.VAULT_MASTER_KEY && argv.includes('config-token') && argv.includes('set')) {
  const { devMasterKey } = await import('./dev-master-key.mjs')
  const { defaultDatabaseUrl } = await import('../prisma/migrate.mjs')
  const databaseUrl = process.env.DATABASE_URL ?? defaultDatabaseUrl
  process.env.VAULT_MASTER_KEY = (
    await devMasterKey({ databaseUrl, legacyFile: join(root, '.roster', 'vault-master-key') })
  ).key
}
await import(pathToFileURL(cli).href)
