import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { freePort } from './node-process.js'
import { waitFor } from './wait.js'

/** One redis-server of a test cluster. */
interface ClusterNode {
  port: number
  child?: ChildProcess
}

export interface RedisCluster {
  /** REDIS_CLUSTER_NODES for Roster's processes. */
  nodes: string
  /** A seed node's URL (REDIS_URL; on a cluster it gives only credentials and TLS). */
  url: string
  /**
   * A QUEUE_PREFIX whose slot a node other than the seed (url) serves: a client that ignored
   * REDIS_CLUSTER_NODES and spoke to the seed alone would meet MOVED on every key.
   */
  prefixAwayFromSeed(): Promise<string>
  /** The port of the master serving this hash slot now. */
  masterOf(slot: number): Promise<number>
  /** Kills that master (SIGKILL) and waits until a replica took its slots over; returns its port. */
  failOver(slot: number): Promise<number>
  /** Starts a killed node again (it rejoins as a replica of whoever holds its slots). */
  restart(port: number): Promise<void>
  stop(): Promise<void>
}

const cli = (port: number, ...args: string[]) =>
  spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' })

/** The hash slot of a key (Redis Cluster's CRC16 of its hash tag, mod 16384). */
export function hashSlot(key: string): number {
  const open = key.indexOf('{')
  if (open >= 0) {
    const close = key.indexOf('}', open + 1)
    if (close > open + 1) key = key.slice(open + 1, close)
  }
  let crc = 0
  for (const byte of Buffer.from(key)) {
    crc ^= byte << 8
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc % 16384
}

/**
 * A real Redis Cluster of six local redis-servers (three masters, each with a replica), made with
 * `redis-cli --cluster create`. Node timeout 1 s, so a killed master's replica is promoted within
 * a few seconds. Nothing is kept on disk beyond the cluster's own node files, removed on stop.
 */
export async function startRedisCluster(): Promise<RedisCluster> {
  if (spawnSync('redis-server', ['--version']).error)
    throw new Error('the Redis Cluster tests need redis-server and redis-cli')
  const dir = mkdtempSync(join(tmpdir(), 'roster-redis-cluster-'))
  const nodes: ClusterNode[] = []
  for (let i = 0; i < 6; i++) nodes.push({ port: await freePort() })
  const start = async (node: ClusterNode) => {
    node.child = spawn(
      'redis-server',
      [
        '--port',
        String(node.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${node.port}.conf`,
        '--cluster-node-timeout',
        '1000',
        // A replica takes over whatever its master's last contact (the default refuses after a long silence).
        '--cluster-replica-validity-factor',
        '0',
      ],
      { stdio: 'ignore' },
    )
    await waitFor(() => cli(node.port, 'ping').stdout.trim() === 'PONG', {
      timeoutMs: 10_000,
      what: `redis-server on ${node.port}`,
    })
  }
  await Promise.all(nodes.map(start))
  const created = spawnSync(
    'redis-cli',
    ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'],
    { encoding: 'utf8' },
  )
  if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`)
  const live = () => nodes.filter((n) => n.child && n.child.exitCode === null && n.child.signalCode === null)
  const healthy = () => live().every((n) => /cluster_state:ok/.test(cli(n.port, 'cluster', 'info').stdout))
  await waitFor(healthy, { timeoutMs: 20_000, intervalMs: 100, what: 'the cluster to be ok on every node' })

  const masterOf = async (slot: number) => {
    for (const n of live()) {
      const slots = cli(n.port, '--json', 'cluster', 'slots').stdout
      try {
        for (const [from, to, master] of JSON.parse(slots) as [number, number, [string, number]][])
          if (slot >= from && slot <= to) return master[1]
      } catch {}
    }
    throw new Error(`no live node says who serves slot ${slot}`)
  }
  const kill = async (port: number) => {
    const node = nodes.find((n) => n.port === port)!
    const child = node.child
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGKILL')
    await exited
  }
  return {
    async prefixAwayFromSeed() {
      for (;;) {
        const prefix = `{c-${randomUUID().slice(0, 8)}}`
        if ((await masterOf(hashSlot(prefix))) !== nodes[0]!.port) return prefix
      }
    },
    nodes: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    url: `redis://127.0.0.1:${nodes[0]!.port}`,
    masterOf,
    async failOver(slot) {
      const old = await masterOf(slot)
      await kill(old)
      await waitFor(async () => (await masterOf(slot).catch(() => old)) !== old && healthy(), {
        timeoutMs: 30_000,
        intervalMs: 100,
        what: `a replica to take slot ${slot} over from ${old}`,
      })
      return old
    },
    async restart(port) {
      await start(nodes.find((n) => n.port === port)!)
      await waitFor(healthy, { timeoutMs: 20_000, intervalMs: 100, what: 'the cluster to be ok again' })
    },
    async stop() {
      await Promise.all(nodes.map((n) => kill(n.port)))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
