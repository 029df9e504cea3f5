import { createHash } from 'node:crypto'
import type { SandboxPort } from '@roster/gateway'
import type { Db } from '@roster/shared'
import type { FleetDriver, HostAddress } from '@roster/shared/fleet'
import { beatingHosts } from '@roster/shared/repositories'

// Where the gateway's sandboxed commands run (`openrouter:bash`): the fleet's runtime hosts, never
// this process. A sandbox's key chooses its host by rendezvous hashing over the live hosts, so a
// session's commands keep finding its files while the fleet stays as it is; the live hosts are read
// at most every few seconds.

const HOSTS_FRESH_MS = 5_000

export function gatewaySandboxes(db: Db, driver: FleetDriver, deadAfterMs: number): SandboxPort {
  let hosts: { at: number; list: HostAddress[] } | undefined
  const live = async () => {
    if (!hosts || Date.now() - hosts.at > HOSTS_FRESH_MS) {
      const rows = await beatingHosts(db, deadAfterMs)
      hosts = {
        at: Date.now(),
        list: rows.filter((r) => r.state === 'live').map((r) => ({ hostId: r.id, address: r.address, epoch: r.epoch })),
      }
    }
    return hosts.list
  }
  const hostFor = async (key: string): Promise<HostAddress> => {
    const list = await live()
    if (!list.length) throw new Error('no runtime host is live to run sandboxed commands')
    const weight = (h: HostAddress) => createHash('sha256').update(`${h.hostId}\0${key}`).digest().readUInt32BE(0)
    return list.reduce((best, h) => (weight(h) > weight(best) ? h : best))
  }
  return {
    async run(key, command, timeoutMs, network) {
      return driver.sandboxCommand(await hostFor(key), key, {
        command,
        ...(timeoutMs ? { timeout_ms: timeoutMs } : {}),
        ...(network ? { network: { allowed_domains: network.allowedDomains } } : {}),
      })
    },
    async discard(key) {
      await driver.discardSandbox(await hostFor(key), key)
    },
    close: () => driver.close(),
  }
}
