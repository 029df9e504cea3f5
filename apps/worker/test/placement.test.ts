import { describe, expect, it } from 'vitest'
import { type Db } from '@roster/shared'
import { vacateHosts } from '@roster/shared/fleet'
import { joinHost, listHosts, placeIntern } from '@roster/shared/repositories'
import { makeIntern, useTestTenant } from '@roster/testing'

// Placement against the record alone (real Postgres, no processes): concurrent placements never
// overfill a host, spread evenly, and each host's count of placed interns (kept by a trigger) stays
// what counting the interns says, through every change an intern's status or host goes through.
const env = useTestTenant()
const times = { deadAfterMs: 15_000 }

async function interns(db: Db, n: number, prefix: string) {
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    const row = await makeIntern(db, env.tenant, { name: `${prefix}-${i}`, status: 'provisioning' })
    ids.push(row.id)
  }
  return ids
}

/** Each host's count as the trigger keeps it, and as counting the interns gives it. */
async function counts(db: Db, hosts: string[]) {
  const kept = await db.$queryRaw<
    { id: string; placed: number }[]
  >`SELECT id, placed FROM runtime_hosts WHERE id = ANY(${hosts}) ORDER BY id`
  const real = await db.$queryRaw<{ id: string; n: number }[]>`
    SELECT h.id, (SELECT count(*)::int FROM interns i WHERE i.runtime_host_id = h.id AND i.status IN ('queued', 'provisioning', 'running')) AS n
    FROM runtime_hosts h WHERE h.id = ANY(${hosts}) ORDER BY h.id`
  return { kept: kept.map((k) => [k.id, k.placed]), real: real.map((r) => [r.id, r.n]) }
}

describe('placement', () => {
  it('never overfills a host under concurrent placements, and fills the least loaded first', async () => {
    const db = env.t.db
    const hosts = ['place-a', 'place-b', 'place-c']
    for (const [i, id] of hosts.entries())
      await joinHost(db, { id, address: `http://127.0.0.1:${20_001 + i}`, capacity: 7 }, times)
    const ids = await interns(db, 30, 'crowd')
    const placed = await Promise.all(ids.map((id) => placeIntern(db, id, 1, times)))
    const on = placed.filter((p) => p !== undefined)
    expect(on).toHaveLength(21)
    const perHost = hosts.map((h) => on.filter((p) => p!.hostId === h).length)
    expect(perHost).toEqual([7, 7, 7])
    const { kept, real } = await counts(db, hosts)
    expect(kept).toEqual(real)
    expect(kept.map(([, n]) => n)).toEqual([7, 7, 7])
    // A stale run (another generation) places nothing.
    const [waiting] = ids.filter((_, i) => placed[i] === undefined)
    await db.$executeRaw`UPDATE runtime_hosts SET capacity = 8 WHERE id = 'place-a'`
    expect(await placeIntern(db, waiting!, 2, times)).toBeUndefined()
    expect(await placeIntern(db, waiting!, 1, times)).toMatchObject({ hostId: 'place-a' })
  })

  it('keeps each host’s count through suspends, failures, deletions and moves', async () => {
    const db = env.t.db
    const hosts = ['count-a', 'count-b']
    for (const [i, id] of hosts.entries())
      await joinHost(db, { id, address: `http://127.0.0.1:${20_101 + i}`, capacity: 100 }, times)
    const ids = await interns(db, 12, 'counted')
    for (const id of ids) await placeIntern(db, id, 1, times)
    const check = async () => {
      const { kept, real } = await counts(db, hosts)
      expect(kept).toEqual(real)
      return kept.map(([, n]) => n as number)
    }
    expect((await check()).reduce((a, b) => a + b)).toBe(12)
    // One statement changing many (as the worker's batched transitions do), one at a time, deletions.
    await db.$executeRaw`UPDATE interns SET status = 'running' WHERE id = ANY(${ids.slice(0, 6)}::uuid[])`
    await db.$executeRaw`UPDATE interns SET status = 'stopped' WHERE id = ANY(${ids.slice(0, 3)}::uuid[])`
    await db.$executeRaw`UPDATE interns SET status = 'failed' WHERE id = ${ids[6]}::uuid`
    await db.intern.delete({ where: { id: ids[7]! } })
    expect((await check()).reduce((a, b) => a + b)).toBe(7)
    // Back from stopped: placed again (queued holds room).
    await db.$executeRaw`UPDATE interns SET status = 'queued' WHERE id = ${ids[0]}::uuid`
    expect((await check()).reduce((a, b) => a + b)).toBe(8)
    // A host's death moves its interns: its count falls to none, and their next placement counts on the other.
    await db.$executeRaw`UPDATE runtime_hosts SET heartbeat_at = now() - interval '1 hour' WHERE id = 'count-a'`
    const { moved } = await vacateHosts(db, times)
    await check()
    // The moved ones, and the queued one (its run places it anew: never on a dead host).
    for (const id of [...moved, ids[0]!]) {
      const [row] = await db.$queryRaw<
        { g: number }[]
      >`SELECT provision_generation AS g FROM interns WHERE id = ${id}::uuid`
      expect(await placeIntern(db, id, row!.g, times)).toMatchObject({ hostId: 'count-b' })
    }
    expect(await check()).toEqual([0, 8])
    const listed = (await listHosts(db, times)).filter((h) => hosts.includes(h.id))
    expect(listed.map((h) => [h.id, h.state, h.interns, h.free])).toEqual([
      ['count-a', 'dead', 0, 100],
      ['count-b', 'live', 8, 92],
    ])
  })
})
