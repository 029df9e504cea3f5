import { randomBytes } from 'node:crypto'
import { GenericContainer, Network, Wait, type StartedNetwork, type StartedTestContainer } from 'testcontainers'
import { PostgreSqlContainer, type StartedPostgreSqlContainer } from '@testcontainers/postgresql'
import { RedisContainer, type StartedRedisContainer } from '@testcontainers/redis'

/**
 * Roster for integration suites: one call starts Postgres, Redis and Roster (its runtime host, API
 * and worker, and the upstream simulator behind the demo catalogue) on one Docker network, and
 * hands back the API's base URL and a fresh account's keys.
 *
 *   const roster = await startRoster()
 *   const client = new OpenRouter({ apiKey: roster.keys.user, serverURL: roster.baseUrl })
 *   …
 *   await roster.stop()
 */

export interface RosterContainersOptions {
  /** Roster's image (built from Roster's Dockerfile). Default: ROSTER_IMAGE, else `roster:local`. */
  image?: string
  /** Default: ROSTER_POSTGRES_IMAGE, else the official `postgres:16`. */
  postgresImage?: string
  /** Default: ROSTER_REDIS_IMAGE, else the official `redis:7`. */
  redisImage?: string
  /**
   * The model catalogue inside the image. Default: the demo catalogue, answered by the upstream
   * simulator (not a real model), which is then started too. Provider credentials go in `env`.
   */
  modelCatalogue?: string
  /** Settings for every Roster process (see Roster's docs/settings.md), e.g. `{ LOG_LEVEL: 'debug' }`. */
  env?: Record<string, string>
  /**
   * Interns' shell commands run in bubblewrap sandboxes, which need the runtime container to run
   * without Docker's seccomp profile and masked /proc paths. Default true; false keeps Docker's
   * defaults, and the runtime host then refuses shell commands (saying why).
   */
  sandboxedShell?: boolean
  /** Runtime hosts in the fleet (default 1), each joining it as runtime-1, runtime-2, …: interns are placed on the least loaded. */
  runtimeHosts?: number
  /** How long each container may take to be ready (default 60 s). */
  startupTimeoutMs?: number
}

export interface BootstrapKeys {
  user: string
  organization: string
  management: string
}

export interface StartedRoster {
  /** The API, e.g. `http://localhost:49153/api/v1`: give it to the official client as `serverURL`. */
  baseUrl: string
  /** One key per kind for the account made at start (`npm run -s admin -- bootstrap`). */
  keys: BootstrapKeys
  accountId: string
  workspaceId: string
  userId: string
  /** Another account with its own workspace and keys (a second tenant). */
  bootstrap(): Promise<Bootstrap>
  /** The containers, for logs or exec: postgres, redis, api, worker, runtime (the first host; runtime-2 … for more) and upstreamSim when started. */
  containers: Record<string, StartedTestContainer>
  network: StartedNetwork
  /** Stops every container and removes the network. */
  stop(): Promise<void>
}

export interface Bootstrap {
  account_id: string
  workspace_id: string
  user_id: string
  keys: BootstrapKeys
}

const secret = () => randomBytes(32).toString('hex')

/**
 * A container with Docker's init (tini) as its PID 1 (`docker run --init`, `init: true` in
 * Compose), which testcontainers has no builder method for. The postgres images run the postmaster
 * as PID 1, which then adopts every orphan in the container and takes one exiting with a status
 * other than 0 or 1 for a crashed server process: it ends every session and recovers. A health
 * probe Docker killed for its timeout on a loaded machine leaves exactly such an orphan. Roster's
 * processes get one too: Node as PID 1 never reaps the orphans of interns' commands.
 */
function withInit<T extends GenericContainer>(container: T): T {
  ;(container as unknown as { hostConfig: { Init?: boolean } }).hostConfig.Init = true
  return container
}

/**
 * A container whose /proc paths Docker leaves unmasked (`docker run --security-opt
 * systempaths=unconfined`): bubblewrap mounts a /proc of its own, which the kernel refuses while
 * parts of the container's /proc are masked. The Engine API takes this as empty MaskedPaths and
 * ReadonlyPaths, which testcontainers has no builder method for.
 */
class UnmaskedContainer extends GenericContainer {
  unmaskSystemPaths(): this {
    Object.assign(this.hostConfig, { MaskedPaths: [], ReadonlyPaths: [] })
    return this
  }
}

export async function startRoster(options: RosterContainersOptions = {}): Promise<StartedRoster> {
  const image = options.image ?? process.env.ROSTER_IMAGE ?? 'roster:local'
  const timeout = options.startupTimeoutMs ?? 60_000
  const started: StartedTestContainer[] = []
  const network = await new Network().start()
  const stop = async () => {
    await Promise.allSettled(started.reverse().map((c) => c.stop()))
    await network.stop().catch(() => {})
  }
  try {
    const [postgres, redis] = (await Promise.all([
      withInit(new PostgreSqlContainer(options.postgresImage ?? process.env.ROSTER_POSTGRES_IMAGE ?? 'postgres:16'))
        .withDatabase('roster')
        .withUsername('postgres')
        .withPassword('postgres')
        .withHealthCheck({
          // One process, no shell: a probe Docker kills for its timeout leaves no orphan (withInit).
          test: ['CMD', 'pg_isready', '--host', 'localhost', '--username', 'postgres', '--dbname', 'roster'],
          interval: 250,
          timeout: 5_000,
          retries: 1_000,
        })
        .withNetwork(network)
        .withNetworkAliases('postgres')
        .withStartupTimeout(timeout)
        .start(),
      withInit(new RedisContainer(options.redisImage ?? process.env.ROSTER_REDIS_IMAGE ?? 'redis:7'))
        .withNetwork(network)
        .withNetworkAliases('redis')
        .withStartupTimeout(timeout)
        .start(),
    ])) as [StartedPostgreSqlContainer, StartedRedisContainer]
    started.push(postgres, redis)

    const shared = {
      ROSTER_API_URL: 'http://api:3000/api/v1',
      RUNTIME_TOKEN: secret(),
      HOST: '0.0.0.0',
      ...options.env,
    }
    // The API and the worker hold the master key and the database; runtime hosts hold neither.
    const trusted = {
      DATABASE_URL: 'postgresql://postgres:postgres@postgres:5432/roster',
      REDIS_URL: 'redis://redis:6379',
      VAULT_MASTER_KEY: secret(),
    }
    const roster = (alias: string, command: string[], env: Record<string, string> = {}) =>
      withInit(new UnmaskedContainer(image))
        .withNetwork(network)
        .withNetworkAliases(alias)
        .withEnvironment({ ...shared, ...env })
        .withCommand(command)
        .withStartupTimeout(timeout)

    const demo = !options.modelCatalogue
    // The API applies the migrations before it listens, so the worker never meets an empty database.
    const [api, sim] = await Promise.all([
      roster('api', ['sh', '-c', 'node prisma/migrate.mjs deploy && exec node apps/api/dist/main.js'], {
        ...trusted,
        PORT: '3000',
        MODEL_CATALOGUE: options.modelCatalogue ?? '/app/deploy/demo-catalogue.json',
      })
        .withExposedPorts(3000)
        .withWaitStrategy(Wait.forHttp('/ready', 3000))
        .start(),
      demo
        ? roster('upstream-sim', ['node', 'packages/upstream-sim/dist/main.js'], { PORT: '3300' })
            .withExposedPorts(3300)
            .withWaitStrategy(Wait.forHttp('/health', 3300))
            .start()
        : undefined,
    ])
    started.push(api, ...(sim ? [sim] : []))

    // Each host joins the fleet through the API, under the id and address it is reached on.
    const hosts = await Promise.all(
      Array.from({ length: options.runtimeHosts ?? 1 }, (_, i) => {
        const id = `runtime-${i + 1}`
        let host = roster(id, ['node', 'apps/runtime/dist/main.js'], {
          PORT: '3100',
          RUNTIME_DATA_DIR: '/data',
          RUNTIME_HOST_ID: id,
          RUNTIME_ADVERTISE_URL: `http://${id}:3100`,
        })
          .withExposedPorts(3100)
          .withWaitStrategy(Wait.forLogMessage(/joined the fleet/))
        if (options.sandboxedShell !== false)
          host = host.withSecurityOpt('seccomp=unconfined', 'apparmor=unconfined').unmaskSystemPaths()
        return host.start()
      }),
    )
    started.push(...hosts)
    const worker = await roster('worker', ['node', 'apps/worker/dist/main.js'], { ...trusted, HEALTH_PORT: '3200' })
      .withExposedPorts(3200)
      .withWaitStrategy(Wait.forHttp('/ready', 3200))
      .start()
    started.push(worker)

    const bootstrap = async (): Promise<Bootstrap> => {
      const result = await api.exec(['node', 'apps/cli/dist/main.js', 'bootstrap', '--json'])
      if (result.exitCode !== 0) throw new Error(`roster bootstrap failed (${result.exitCode}): ${result.output}`)
      return JSON.parse(result.stdout) as Bootstrap
    }
    const first = await bootstrap()
    return {
      baseUrl: `http://${api.getHost()}:${api.getMappedPort(3000)}/api/v1`,
      keys: first.keys,
      accountId: first.account_id,
      workspaceId: first.workspace_id,
      userId: first.user_id,
      bootstrap,
      containers: {
        postgres,
        redis,
        api,
        worker,
        ...Object.fromEntries(hosts.map((h, i) => [i === 0 ? 'runtime' : `runtime-${i + 1}`, h])),
        ...(sim ? { upstreamSim: sim } : {}),
      },
      network,
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}
