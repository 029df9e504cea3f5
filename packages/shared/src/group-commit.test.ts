import { describe, expect, it } from 'vitest'
import { GroupCommit } from './group-commit.js'

const tick = () => new Promise((r) => setTimeout(r, 5))

describe('GroupCommit', () => {
  it('writes a lone item alone, and items arriving together as one batch', async () => {
    const batches: number[][] = []
    const singles: number[] = []
    const sut = new GroupCommit<number, number>({
      writeMany: async (items) => (batches.push(items), items.map((i) => i * 10)),
      writeOne: async (item) => (singles.push(item), item * 10),
      maxInFlight: 1,
    })
    expect(await sut.submit(1)).toBe(10)
    expect(await Promise.all([2, 3, 4].map((i) => sut.submit(i)))).toEqual([20, 30, 40])
    expect(singles).toEqual([1])
    expect(batches).toEqual([[2, 3, 4]])
    expect(sut.stats).toEqual({ batches: 1, batchedItems: 3, splitBatches: 0 })
  })

  it('splits a refused batch so each item gets its own answer', async () => {
    const sut = new GroupCommit<number, string>({
      writeMany: async () => {
        throw new Error('refused as a whole')
      },
      writeOne: async (item) => {
        if (item === 2) throw new Error('two is refused')
        return `ok ${item}`
      },
    })
    const results = await Promise.allSettled([1, 2, 3].map((i) => sut.submit(i)))
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      'ok 1',
      'two is refused',
      'ok 3',
    ])
    expect(sut.stats.splitBatches).toBe(1)
  })

  it('never writes two items of one key in one batch or at the same time, and keeps their order', async () => {
    const log: string[] = []
    const write = async (item: string) => {
      log.push(`start ${item}`)
      await tick()
      log.push(`end ${item}`)
    }
    const sut = new GroupCommit<string, string>({
      writeMany: async (items) => {
        expect(new Set(items.map((i) => i[0])).size).toBe(items.length)
        await Promise.all(items.map(write))
        return items
      },
      writeOne: async (item) => (await write(item), item),
      key: (item) => item[0]!,
      maxInFlight: 4,
    })
    await Promise.all(['a1', 'a2', 'b1', 'a3', 'b2'].map((i) => sut.submit(i)))
    const order = (k: string) => log.filter((l) => l.startsWith('end ') && l[4] === k)
    expect(order('a')).toEqual(['end a1', 'end a2', 'end a3'])
    expect(order('b')).toEqual(['end b1', 'end b2'])
    expect(log.indexOf('start a2')).toBeGreaterThan(log.indexOf('end a1'))
    expect(log.indexOf('start a3')).toBeGreaterThan(log.indexOf('end a2'))
    expect(log.indexOf('start b2')).toBeGreaterThan(log.indexOf('end b1'))
  })
})
