import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { waitFor } from './wait.js'
import { freePort } from './node-process.js'

/**
 * A private redis-server on its own port, which a test may stop (SIGKILL) and start again. Without
 * `persist` it comes back empty; with it, from its append-only file (as docker-compose.yml runs
 * Redis: a killed process loses nothing it acknowledged).
 */
export async function startRedisServer(
  opts: { persist?: boolean } = {},
): Promise<{ url: string; stop(): Promise<void>; start(): Promise<void> }> {
  const port = await freePort()
  const dir = opts.persist ? mkdtempSync(join(tmpdir(), 'roster-redis-')) : undefined
  let child: ChildProcess | undefined
  const start = async () => {
    const persistence = dir ? ['--appendonly', 'yes', '--dir', dir] : ['--appendonly', 'no']
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence], {
      stdio: 'ignore',
    })
    // Not installed: said at once (the tests that need it check first: needs.ts), not as a wait that times out.
    const failed = new Promise<never>((_, reject) =>
      child!.once('error', (err) => reject(new Error(`redis-server could not be started: ${err.message}`))),
    )
    failed.catch(() => {})
    const { Redis } = await import('ioredis')
    const up = waitFor(
      async () => {
        const probe = new Redis(port, '127.0.0.1', {
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        })
        probe.on('error', () => {})
        try {
          await probe.connect()
          return (await probe.ping()) === 'PONG'
        } catch {
          return false
        } finally {
          probe.disconnect()
        }
      },
      { timeoutMs: 10_000, what: `redis-server on port ${port}` },
    )
    await Promise.race([up, failed])
  }
  const stop = async () => {
    if (!child || child.exitCode !== null) return
    const exited = new Promise((r) => child!.once('exit', r))
    child.kill('SIGKILL')
    await exited
  }
  await start()
  return { url: `redis://127.0.0.1:${port}`, stop, start }
}
