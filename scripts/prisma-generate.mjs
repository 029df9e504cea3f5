#!/usr/bin/env node
// Generates the Prisma client into packages/shared/src/generated/prisma, offline.
// `prisma generate` only needs the schema engine binary's path to exist (it never runs it for the
// `prisma-client` generator), so we point it at this file rather than letting Prisma download one.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const env = {
  ...process.env,
  PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? fileURLToPath(import.meta.url),
  PRISMA_HIDE_UPDATE_MESSAGE: '1',
  CHECKPOINT_DISABLE: '1',
}
const prisma = join(root, 'node_modules', 'prisma', 'build', 'index.js')
const run = spawnSync(process.execPath, [prisma, 'generate', '--no-hints'], { cwd: root, env, encoding: 'utf8' })
if (run.status !== 0) {
  process.stderr.write(run.stdout + run.stderr)
  process.exit(run.status ?? 1)
}
