import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { FairGate } from './fair-gate.js'
import { Cancellation } from './cancellation.js'

describe('FairGate', () => {
  it('admits at once below capacity and share, without a promise', () => {
    const sut = new FairGate(4, 2)
    expect(sut.enter('a')).toBe(true)
    expect(sut.enter('a')).toBe(true)
    expect(sut.enter('b')).toBe(true)
    expect(sut.state).toEqual({ inFlight: 3, waiting: 0 })
  })

  it('holds a tenant at its share while another tenant still gets in', async () => {
    const sut = new FairGate(10, 2)
    sut.enter('greedy')
    sut.enter('greedy')
    const third = sut.enter('greedy')
    expect(third).toBeInstanceOf(Promise)
    expect(sut.enter('other')).toBe(true)
    sut.leave('greedy')
    await third
    expect(sut.state).toEqual({ inFlight: 3, waiting: 0 })
  })

  it('serves waiting tenants in turn when places free up, not the one that queued most first', async () => {
    const sut = new FairGate(2, 2)
    sut.enter('a')
    sut.enter('a')
    const order: string[] = []
    const wait = (t: string) => (sut.enter(t) as Promise<void>).then(() => order.push(t))
    const waits = [wait('a'), wait('a'), wait('a'), wait('b'), wait('c')]
    for (let i = 0; i < 5; i++) {
      sut.leave(order.at(-1) ?? 'a')
      await Promise.resolve()
      await Promise.resolve()
    }
    await Promise.all(waits)
    expect(order.slice(0, 3)).toEqual(['a', 'b', 'c'])
  })

  it('lets a cancelled wait go without taking a place', async () => {
    const sut = new FairGate(1, 1)
    sut.enter('a')
    const cancel = new Cancellation()
    const waiting = sut.enter('b', cancel) as Promise<void>
    cancel.cancel()
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' })
    expect(sut.state).toEqual({ inFlight: 1, waiting: 0 })
    sut.leave('a')
    expect(sut.state).toEqual({ inFlight: 0, waiting: 0 })
    expect(cancel.listening).toBe(0)
  })

  it('never exceeds capacity or a share, and admits every call in the end (any interleaving)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.boolean()), { minLength: 1, maxLength: 60 }),
        async (ops) => {
          const sut = new FairGate(3, 2)
          const held: string[] = []
          const pending: Promise<void>[] = []
          let admitted = 0
          const check = () => {
            const counts = held.reduce<Record<string, number>>((m, t) => ((m[t] = (m[t] ?? 0) + 1), m), {})
            expect(held.length).toBeLessThanOrEqual(3)
            for (const n of Object.values(counts)) expect(n).toBeLessThanOrEqual(2)
          }
          for (const [tenant, release] of ops) {
            if (release && held.length) sut.leave(held.shift()!)
            const entered = sut.enter(tenant)
            if (entered === true) {
              held.push(tenant)
              admitted++
            } else pending.push(entered.then(() => void (held.push(tenant), admitted++, check())))
            check()
          }
          while (held.length || admitted < ops.length) {
            if (held.length) sut.leave(held.shift()!)
            await new Promise((r) => setImmediate(r))
          }
          await Promise.all(pending)
          expect(admitted).toBe(ops.length)
        },
      ),
      { numRuns: 200 },
    )
  })
})
