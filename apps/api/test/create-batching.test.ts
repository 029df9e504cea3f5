import { beforeAll, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { resolveCaller, type Caller } from '@roster/shared'
import { CreateBatcher, createIntern } from '@roster/shared/interns'
import { LocalVault } from '@roster/shared/vault'
import { makeUserKey, useTestTenant } from '@roster/testing'
import { TEST_MASTER_KEY } from './helpers.js'

// Group commit of creates: the batch path must give every caller the answer it would get alone.
const env = useTestTenant()
let caller: Caller
const vault = new LocalVault({ masterKey: Buffer.from(TEST_MASTER_KEY, 'hex'), lockTimeoutMs: 2_000 })

beforeAll(async () => {
  caller = (await resolveCaller(env.t.db, env.tenant.keys.user))!
})

function deps(limit = 1_000) {
  const batcher = new CreateBatcher(env.t.db, limit)
  // What the domain tells after each committed create (the API wakes the relay and evicts with it).
  const told = { outboxWritten: 0, changed: [] as string[] }
  const after = {
    outboxWritten: () => void told.outboxWritten++,
    internsChanged: (ids: string[]) => void told.changed.push(...ids),
  }
  return { db: env.t.db, vault, internLimitPerMember: limit, batcher, after, told }
}
const settle = <T>(ps: Promise<T>[]) => Promise.allSettled(ps)
const reasonOf = (r: PromiseSettledResult<unknown>) =>
  r.status === 'rejected' ? (r.reason as { reason?: string }).reason : 'ok'

describe('batched creates', () => {
  it('write concurrent creates in shared statements, every row accounted for', async () => {
    const d = deps()
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => createIntern(d, caller, { name: `b-${i}`, provision: true }, `batch-${i}`)),
    )
    expect(results.every((r) => r.status === 201)).toBe(true)
    expect(d.batcher.stats.batches).toBeGreaterThan(0)
    expect(d.batcher.stats.batchedItems).toBeGreaterThan(1)
    const ids = results.map((r) => r.intern.id)
    expect(await env.t.db.intern.count({ where: { id: { in: ids } } })).toBe(60)
    expect(
      await env.t.db.outboxMessage.count({ where: { jobId: { in: ids.map((id) => `intern.provision.${id}.1`) } } }),
    ).toBe(60)
    expect(new Set(results.map((r) => r.intern.vault_id)).size).toBe(60)
    // Each committed create was told once: the relay woken, the intern announced.
    expect(d.told.outboxWritten).toBe(60)
    expect(d.told.changed.sort()).toEqual([...ids].sort())
    // A replay changes nothing, and tells nothing.
    expect((await createIntern(d, caller, { name: 'b-0', provision: true }, 'batch-0')).status).toBe(200)
    expect([d.told.outboxWritten, d.told.changed.length]).toEqual([60, 60])
  })

  it('answer each create of a refused batch as if it had been alone', async () => {
    const d = deps()
    const taken = `taken-${randomUUID().slice(0, 6)}`
    await createIntern(d, caller, { name: taken, provision: false }, `first-${taken}`)
    const [clash, ok1, sameKeyA, sameKeyB, badVault, ok2] = await settle([
      createIntern(d, caller, { name: taken, provision: false }, `second-${taken}`),
      createIntern(d, caller, { name: `fine-${taken}`, provision: false }, `fine-${taken}`),
      createIntern(d, caller, { name: `dup-${taken}`, provision: false }, `dup-key-${taken}`),
      createIntern(d, caller, { name: `dup-${taken}`, provision: false }, `dup-key-${taken}`),
      createIntern(d, caller, { name: `vault-${taken}`, vault_id: randomUUID(), provision: false }, `vault-${taken}`),
      createIntern(d, caller, { name: `fine2-${taken}`, provision: false }, `fine2-${taken}`),
    ])
    expect(reasonOf(clash!)).toBe('name_taken')
    expect(reasonOf(badVault!)).toBe('vault_not_attachable')
    expect([ok1, ok2].map((r) => r!.status)).toEqual(['fulfilled', 'fulfilled'])
    const dup = [sameKeyA, sameKeyB].map(
      (r) => (r as PromiseFulfilledResult<{ status: number; intern: { id: string } }>).value,
    )
    expect(dup.map((r) => r.status).sort()).toEqual([200, 201])
    expect(dup[0]!.intern.id).toBe(dup[1]!.intern.id)
    expect(d.batcher.stats.splitBatches).toBeGreaterThan(0)
  })

  it('keep the member limit exact when a batch would overflow it', async () => {
    const member = await makeUserKey(env.t.db, env.tenant.workspaceId)
    const memberCaller = (await resolveCaller(env.t.db, member.key))!
    const d = deps(7)
    const results = await settle(
      Array.from({ length: 25 }, (_, i) =>
        createIntern(d, memberCaller, { name: `cap-${i}`, provision: false }, `cap-${i}`),
      ),
    )
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(7)
    expect(results.filter((r) => r.status === 'rejected').every((r) => reasonOf(r) === 'intern_limit_reached')).toBe(
      true,
    )
    expect(await env.t.db.intern.count({ where: { creatorUserId: member.userId } })).toBe(7)
    const shards = await env.t.db.memberQuotaShard.findMany({ where: { userId: member.userId } })
    expect(shards.reduce((s, x) => s + x.used, 0)).toBe(7)
  })

  it('serve the full API: 64 concurrent creates through one app answer 201 with distinct interns', async () => {
    const { buildTestApp, auth, json } = await import('./helpers.js')
    const app = await buildTestApp(env.t.db, { INTERN_LIMIT_PER_MEMBER: '100000' })
    try {
      const res = await Promise.all(
        Array.from({ length: 64 }, (_, i) =>
          app.inject({
            method: 'POST',
            url: '/api/v1/interns',
            headers: { ...auth(env.tenant.keys.user), ...json },
            payload: { name: `api-${i}`, provision: true },
          }),
        ),
      )
      expect(res.map((r) => r.statusCode).every((c) => c === 201)).toBe(true)
      expect(new Set(res.map((r) => r.json().id)).size).toBe(64)
    } finally {
      await app.closeAll()
    }
  })
})
