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
await import(pathToFileURL(cli).href)
