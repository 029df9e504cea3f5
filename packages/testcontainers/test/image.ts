import { spawnSync } from 'node:child_process'
import { mkdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { repoRoot } from '@roster/testing'

/** The images the container tests build from or start (each a setting, the official image by default). */
export const CONTAINER_TEST_IMAGES = [
  process.env.ROSTER_NODE_IMAGE ?? 'node:20-bookworm-slim',
  process.env.ROSTER_POSTGRES_IMAGE ?? 'postgres:16',
  process.env.ROSTER_REDIS_IMAGE ?? 'redis:7',
  ...(process.env.TESTCONTAINERS_RYUK_DISABLED === 'true'
    ? []
    : [process.env.RYUK_CONTAINER_IMAGE ?? 'testcontainers/ryuk:0.14.0']),
]

/** The image the container tests run: ROSTER_IMAGE, else roster:local. */
export const image = process.env.ROSTER_IMAGE ?? 'roster:local'

/**
 * Builds Roster's image from this checkout (base image ROSTER_NODE_IMAGE, else the official node:20
 * image), once at a time across test files: a second file waits for the first build and then meets
 * Docker's cache.
 */
export async function buildImage(): Promise<void> {
  const lock = join(tmpdir(), `roster-image-build-${image.replace(/[^a-z0-9]/gi, '_')}.lock`)
  for (;;) {
    try {
      mkdirSync(lock)
      break
    } catch {
      // A lock older than 20 minutes was left by a killed run.
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > 1_200_000)
        rmSync(lock, { recursive: true, force: true })
      await new Promise((r) => setTimeout(r, 500))
    }
  }
  try {
    const r = spawnSync(
      'docker',
      [
        'build',
        '--build-arg',
        `BASE_IMAGE=${process.env.ROSTER_NODE_IMAGE ?? 'node:20-bookworm-slim'}`,
        '-t',
        image,
        '.',
      ],
      {
        cwd: repoRoot,
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      },
    )
    if (r.status !== 0) throw new Error(`docker build failed:\n${`${r.stdout}${r.stderr}`.slice(-3000)}`)
  } finally {
    rmSync(lock, { recursive: true, force: true })
  }
}
