import { describe, expect, it } from 'vitest'
import { isUniqueViolation, Prisma, TransitionBatcher } from '@roster/shared'
import { makeIntern, useTestTenant } from '@roster/testing'

// Batched transitions must keep every guard of a single transition, per intern.
const env = useTestTenant()

const queuedInterns = (n: number) => Promise.all(Array.from({ length: n }, () => makeIntern(env.t.db, env.tenant)))
const progress = (n: number) => ({ step_label: `step ${n}`, step_number: n, total_steps: 5 })

describe('TransitionBatcher', () => {
  it('applies concurrent transitions in shared statements, honouring status and generation per intern', async () => {
    const sut = new TransitionBatcher(env.t.db)
    const interns = await queuedInterns(30)
    const results = await Promise.all(
      interns.map((i, k) =>
        sut.run({
          internId: i.id,
          generation: k % 5 === 0 ? 2 : 1,
          from: ['queued'],
          to: 'provisioning',
          set: { progress: progress(1) },
        }),
      ),
    )
    expect(sut.stats.batches).toBeGreaterThan(0)
    results.forEach((r, k) => (k % 5 === 0 ? expect(r).toBeNull() : expect(r?.id).toBe(interns[k]!.id)))
    const rows = await env.t.db.intern.findMany({ where: { id: { in: interns.map((i) => i.id) } } })
    for (const row of rows) {
      const k = interns.findIndex((i) => i.id === row.id)
      if (k % 5 === 0) expect(row).toMatchObject({ status: 'queued', progress: null })
      else expect(row).toMatchObject({ status: 'provisioning', progress: progress(1) })
    }
  })

  it('runs the transitions of one intern in order, never two at once', async () => {
    const sut = new TransitionBatcher(env.t.db)
    const interns = await queuedInterns(20)
    // Each intern's second transition is only allowed once its first has committed.
    const results = await Promise.all(
      interns.flatMap((i) => [
        sut.run({ internId: i.id, from: ['queued'], to: 'provisioning', set: { progress: progress(1) } }),
        sut.run({
          internId: i.id,
          from: ['provisioning'],
          to: 'running',
          set: { progress: null, lastFailureMessage: null },
        }),
      ]),
    )
    expect(results.every((r) => r !== null)).toBe(true)
    expect(
      await env.t.db.intern.count({
        where: { id: { in: interns.map((i) => i.id) }, status: 'running', progress: { equals: Prisma.DbNull } },
      }),
    ).toBe(20)
  })

  it('carries every change of a single transition, a new provisioning generation included', async () => {
    const sut = new TransitionBatcher(env.t.db)
    const interns = await queuedInterns(4)
    await Promise.all(
      interns.map((i) =>
        env.t.db.intern.update({ where: { id: i.id }, data: { status: 'failed', lastFailureMessage: 'boom' } }),
      ),
    )
    const rows = await Promise.all(
      interns.map((i) =>
        sut.run({
          internId: i.id,
          from: ['failed'],
          to: 'queued',
          set: { lastFailureMessage: null, bumpGeneration: true },
        }),
      ),
    )
    expect(sut.stats.batches).toBeGreaterThan(0)
    expect(rows.map((r) => r?.provision_generation)).toEqual([2, 2, 2, 2])
    const stored = await env.t.db.intern.findMany({ where: { id: { in: interns.map((i) => i.id) } } })
    expect(
      stored.every((r) => r.status === 'queued' && r.lastFailureMessage === null && r.provisionGeneration === 2),
    ).toBe(true)
  })

  it('refuses a transition the table does not allow, before touching the database', async () => {
    const sut = new TransitionBatcher(env.t.db)
    const [intern] = await queuedInterns(1)
    await expect(sut.run({ internId: intern!.id, from: ['stopped'], to: 'running' })).rejects.toThrow(/not allowed/)
  })

  it('splits a batch that clashes on a hostname, so only the clashing transition fails', async () => {
    const sut = new TransitionBatcher(env.t.db)
    const interns = await queuedInterns(6)
    const results = await Promise.allSettled(
      interns.map((i, k) =>
        sut.run({
          internId: i.id,
          from: ['queued'],
          to: 'provisioning',
          set: { progress: progress(2), reserveHostname: k < 2 ? 'same.interns.test' : `h${k}-${i.id}.interns.test` },
        }),
      ),
    )
    const failed = results.filter((r) => r.status === 'rejected')
    expect(failed).toHaveLength(1)
    expect(isUniqueViolation((failed[0] as PromiseRejectedResult).reason)).toBe(true)
    expect(sut.stats.splitBatches).toBeGreaterThan(0)
    expect(await env.t.db.intern.count({ where: { hostname: 'same.interns.test' } })).toBe(1)
    expect(
      await env.t.db.intern.count({ where: { id: { in: interns.map((i) => i.id) }, status: 'provisioning' } }),
    ).toBe(5)
  })
})
