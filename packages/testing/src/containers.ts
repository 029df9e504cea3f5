import { spawnSync } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import type { GenericContainer } from 'testcontainers'

/**
 * Why Docker cannot be used here, or undefined when an engine answers. Tests that need one say
 * this and skip; CI starts an engine (`.ci/run`), so there they run.
 */
export async function dockerProblem(): Promise<string | undefined> {
  const { getContainerRuntimeClient } = await import('testcontainers')
  try {
    await getContainerRuntimeClient()
    return undefined
  } catch (err) {
    return `no Docker engine is reachable (${(err as Error).message.split('\n')[0]}); start one (apt-get install docker.io; dockerd) to run this test`
  }
}

/**
 * Why these images cannot be had here (neither present nor pullable), or undefined. A machine
 * without a registry builds local stand-ins and names them in the image settings.
 */
export function imagesProblem(images: string[]): string | undefined {
  for (const image of images) {
    if (spawnSync('docker', ['image', 'inspect', image], { stdio: 'ignore' }).status === 0) continue
    const pulled = spawnSync('docker', ['pull', image], { encoding: 'utf8', timeout: 120_000 })
    if (pulled.status !== 0) {
      return `the image ${image} is not here and cannot be pulled (${(pulled.stderr || String(pulled.error ?? '')).trim().split('\n').pop()}); where no registry is reachable, run scripts/containers/build-local-images.sh and set ROSTER_NODE_IMAGE, ROSTER_POSTGRES_IMAGE, ROSTER_REDIS_IMAGE (and RYUK_CONTAINER_IMAGE) to its images`
    }
  }
  return undefined
}

/**
 * Why the container tests cannot run here, or undefined: no engine, or an image they need cannot
 * be had. With ROSTER_TEST_CONTAINERS=require (CI) that is a failure, not a skip.
 */
export async function containerTestsProblem(images: string[]): Promise<string | undefined> {
  const problem = (await dockerProblem()) ?? imagesProblem(images)
  if (problem && process.env.ROSTER_TEST_CONTAINERS === 'require')
    throw new Error(`ROSTER_TEST_CONTAINERS=require, but the container tests cannot run: ${problem}`)
  return problem
}

/** How to call Compose here: the v2 plugin (`docker compose`), else v1 (`docker-compose`), else undefined. */
export function composeCommand(): { cmd: string; args: string[]; v2: boolean } | undefined {
  if (spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0)
    return { cmd: 'docker', args: ['compose'], v2: true }
  if (spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0)
    return { cmd: 'docker-compose', args: [], v2: false }
  return undefined
}

/**
 * A container with Docker's init (tini) as its PID 1 (`docker run --init`), which testcontainers
 * has no builder method for. The postgres images run the postmaster as PID 1, which then adopts
 * every orphan in the container, and treats one that exits with a status other than 0 or 1 as a
 * crashed server process: it ends every session and recovers ("the database system is in recovery
 * mode"). A health probe Docker killed for its timeout on a loaded machine leaves exactly such an
 * orphan (testcontainers' probe is `sh -c pg_isready …`: the shell is killed, pg_isready exits 2).
 */
function withInit<T extends GenericContainer>(container: T): T {
  ;(container as unknown as { hostConfig: { Init?: boolean } }).hostConfig.Init = true
  return container
}

/** The health probe run as one process (no shell to leave it orphaned when Docker kills the probe). */
const PG_READY = {
  test: ['CMD', 'pg_isready', '--host', 'localhost', '--username', 'postgres', '--dbname', 'postgres'],
  interval: 250,
  timeout: 5_000,
  retries: 1_000,
} satisfies Parameters<GenericContainer['withHealthCheck']>[0]

/** Lines of Postgres's log that say a server process died and every session was ended with it. */
const POSTGRES_CRASH =
  /terminated by signal|exited with exit code (?!1\b)\d|terminating any other active server processes|PANIC|not properly shut down|out of memory/i

/**
 * Keeps the shared Postgres container's log (a file in the temporary directory, named on stdout)
 * and says at once, on stdout, any line telling that a server process died: every test file's
 * sessions end with it ("the database system is in recovery mode"), and the tests' own errors then
 * never say why.
 */
function watchPostgresLog(stream: Readable) {
  const file = join(tmpdir(), `roster-test-postgres-${process.pid}.log`)
  const out = createWriteStream(file)
  process.stdout.write(`tests: the containerised Postgres's log is kept in ${file}\n`)
  let rest = ''
  stream.on('data', (chunk: Buffer | string) => {
    out.write(chunk)
    const lines = (rest + chunk.toString()).split('\n')
    rest = lines.pop() ?? ''
    for (const line of lines)
      if (POSTGRES_CRASH.test(line)) process.stdout.write(`tests: the containerised Postgres said: ${line}\n`)
  })
  stream.on('end', () => out.end())
}

/**
 * Postgres and Redis in containers for the test run (the global setup's choice when DATABASE_URL /
 * REDIS_URL are unset and Docker answers). Images are settings whose defaults are the official
 * ones: ROSTER_POSTGRES_IMAGE (postgres:15: the tests drive Debian bookworm's client tools, such
 * as pg_dump 15, against it) and ROSTER_REDIS_IMAGE (redis:7).
 */
export async function startServiceContainers(want: {
  postgres: boolean
  redis: boolean
}): Promise<{ databaseUrl?: string; redisUrl?: string; stop(): Promise<void> }> {
  const [{ PostgreSqlContainer }, { RedisContainer }] = await Promise.all([
    import('@testcontainers/postgresql'),
    import('@testcontainers/redis'),
  ])
  const [postgres, redis] = await Promise.all([
    want.postgres
      ? withInit(new PostgreSqlContainer(process.env.ROSTER_POSTGRES_IMAGE ?? 'postgres:15'))
          .withDatabase('postgres')
          .withUsername('postgres')
          .withPassword('postgres')
          // The tests make a database per file and many connections: more than the default 100.
          .withCommand(['postgres', '-c', 'max_connections=500', '-c', 'fsync=off'])
          .withHealthCheck(PG_READY)
          .withLogConsumer(watchPostgresLog)
          .start()
      : undefined,
    want.redis ? new RedisContainer(process.env.ROSTER_REDIS_IMAGE ?? 'redis:7').start() : undefined,
  ])
  return {
    databaseUrl: postgres?.getConnectionUri(),
    redisUrl: redis ? `redis://${redis.getHost()}:${redis.getMappedPort(6379)}` : undefined,
    async stop() {
      await Promise.allSettled([postgres?.stop(), redis?.stop()])
    },
  }
}
