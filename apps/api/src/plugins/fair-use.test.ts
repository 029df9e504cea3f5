import { describe, expect, it, vi } from 'vitest'
import { Admission } from './fair-use.js'
import { Lru } from './lru.js'

const caller = (keyId: string, workspaceId = 'w1') => ({ keyId, workspaceId })

/** An admission whose process read as loaded (its share at the floor), and a clock the test moves. */
function loadedWithClock(limits: { perKey: number; perKeyUnderLoad: number }) {
  let now = 1_000_000
  const clock = vi.spyOn(performance, 'now').mockImplementation(() => now)
  const sut = new Admission({ ...limits, perWorkspace: 0, bodyBytes: 0 })
  sut.adjust(0.99)
  sut.adjust(0.99)
  return {
    sut,
    advance: (ms: number) => void (now += ms),
    close: () => {
      sut.close()
      clock.mockRestore()
    },
  }
}

describe('Admission', () => {
  it('holds a key to its share and a workspace to its own, and frees both when a request ends', () => {
    const refused: string[] = []
    const sut = new Admission({ perKey: 2, perWorkspace: 3, bodyBytes: 0 }, (limit) => refused.push(limit))
    const a1 = sut.enter(caller('a'))
    const a2 = sut.enter(caller('a'))
    expect(sut.enter(caller('a'))).toMatchObject({ status: 429, message: expect.stringMatching(/KEY_CONCURRENCY/) })
    const b1 = sut.enter(caller('b'))
    expect(sut.enter(caller('c'))).toMatchObject({
      status: 429,
      message: expect.stringMatching(/WORKSPACE_CONCURRENCY/),
    })
    expect(typeof sut.enter(caller('c', 'w2'))).toBe('function')
    ;(a1 as () => void)()
    ;(a1 as () => void)() // twice: counted once
    expect(sut.open('a')).toBe(1)
    expect(typeof sut.enter(caller('a'))).toBe('function')
    ;(a2 as () => void)()
    ;(b1 as () => void)()
    expect(refused).toEqual(['key_concurrency', 'workspace_concurrency'])
  })

  it("shrinks every key's share to half the busiest key's while the process is loaded, and grows it back after", () => {
    const sut = new Admission({ perKey: 64, perKeyUnderLoad: 8, perWorkspace: 0, bodyBytes: 0 })
    try {
      const greedy = Array.from({ length: 40 }, () => sut.enter(caller('greedy')))
      const modest = [sut.enter(caller('modest')), sut.enter(caller('modest'))]
      sut.adjust(0.97)
      expect(sut.share).toBe(20)
      expect(sut.enter(caller('greedy'))).toMatchObject({
        status: 429,
        message: expect.stringMatching(/share is 20 while this server is loaded/),
      })
      // A key below the share is not touched by it.
      expect(typeof sut.enter(caller('modest'))).toBe('function')
      sut.adjust(0.99)
      sut.adjust(0.99)
      expect(sut.share).toBe(8)
      sut.adjust(0.8) // between: held
      expect(sut.share).toBe(8)
      for (let i = 0; i < 10; i++) sut.adjust(0.3)
      expect(sut.share).toBe(64)
      for (const leave of [...greedy, ...modest]) (leave as () => void)()
    } finally {
      sut.close()
    }
  })

  it('squeezes a key only while other keys have requests open: a lone client keeps its whole share', () => {
    const sut = new Admission({ perKey: 16, perKeyUnderLoad: 4, perWorkspace: 0, bodyBytes: 0 })
    try {
      // A cold start's busy loop: the share falls to the floor.
      sut.adjust(0.99)
      sut.adjust(0.99)
      expect(sut.share).toBe(4)
      // A lone client's burst of 16 (the compliance suite sends 17 at once) is admitted whole…
      const lone = Array.from({ length: 16 }, () => sut.enter(caller('lone')))
      expect(lone.every((l) => typeof l === 'function')).toBe(true)
      expect(sut.enter(caller('lone'))).toMatchObject({
        status: 429,
        message: expect.stringMatching(/\(KEY_CONCURRENCY\)/),
      })
      // …while another key, once it is there, is protected by the squeeze.
      const other = sut.enter(caller('other'))
      expect(typeof other).toBe('function')
      expect(sut.enter(caller('lone'))).toMatchObject({
        message: expect.stringMatching(/share is 4 while this server is loaded/),
      })
      ;(other as () => void)()
      for (const leave of lone) (leave as () => void)()
    } finally {
      sut.close()
    }
  })

  it("never squeezes a user's chats for the interns they wait on, and still holds a flood from another workspace", () => {
    // 150 interns of one workspace each calling a model (their keys), while their user sends 12 chats
    // at once (relays to the interns' hosts), on a loaded process.
    const sut = new Admission({ perKey: 64, perKeyUnderLoad: 8, perWorkspace: 0, bodyBytes: 0 })
    try {
      const intern = (i: number, ws = 'team') => ({
        keyId: `intern-${ws}-${i}`,
        workspaceId: ws,
        kind: 'intern' as const,
      })
      const user = { keyId: 'alice', workspaceId: 'team', kind: 'user' as const }
      const calls = Array.from({ length: 150 }, (_, i) => sut.enter(intern(i)))
      expect(calls.every((c) => typeof c === 'function')).toBe(true)
      const chats = Array.from({ length: 10 }, () => sut.enter(user, 0, 'relay'))
      sut.adjust(0.99)
      sut.adjust(0.99)
      expect(sut.share).toBe(8)
      chats.push(sut.enter(user, 0, 'relay'), sut.enter(user, 0, 'relay'))
      expect(chats.every((c) => typeof c === 'function')).toBe(true)
      // Its own calls to the doors are not squeezed for its own interns either: they are its turns' work.
      const own = Array.from({ length: 12 }, () => sut.enter(user))
      expect(own.every((c) => typeof c === 'function')).toBe(true)
      // KEY_CONCURRENCY still holds every kind of work.
      const more = Array.from({ length: 64 - 24 }, () => sut.enter(user, 0, 'relay'))
      expect(more.every((c) => typeof c === 'function')).toBe(true)
      expect(sut.enter(user, 0, 'relay')).toMatchObject({ message: expect.stringMatching(/\(KEY_CONCURRENCY\)/) })
      // Another workspace's flood is squeezed for them (the user's chats and the interns are others to it)…
      const flood = Array.from({ length: 8 }, () => sut.enter({ keyId: 'mallory', workspaceId: 'elsewhere' }))
      expect(flood.every((c) => typeof c === 'function')).toBe(true)
      expect(sut.enter({ keyId: 'mallory', workspaceId: 'elsewhere' })).toMatchObject({
        status: 429,
        message: expect.stringMatching(/share is 8 while this server is loaded/),
      })
      // …and the user's door calls are squeezed for the flood's sake, as any key's.
      expect(sut.enter(user)).toMatchObject({ message: expect.stringMatching(/share is 8 while/) })
      // Alone with its own workspace's interns, the flood is not squeezed for them (its own turns' work)…
      for (const leave of [...chats, ...own, ...more, ...calls]) (leave as () => void)()
      const mallory = { keyId: 'mallory', workspaceId: 'elsewhere' }
      const ownIntern = sut.enter(intern(0, 'elsewhere'))
      const ninth = sut.enter(mallory)
      expect(typeof ninth).toBe('function')
      // …but another workspace's interns are others to it: squeezed again.
      const theirs = sut.enter(intern(1))
      expect(sut.enter(mallory)).toMatchObject({ status: 429, message: expect.stringMatching(/share is 8 while/) })
      for (const leave of [...flood, ownIntern, ninth, theirs]) (leave as () => void)()
      expect(sut.open('alice')).toBe(0)
    } finally {
      sut.close()
    }
  })

  it("lets a user alone with its own interns keep KEY_CONCURRENCY while loaded, the interns' calls ended or not", () => {
    const { sut, advance, close } = loadedWithClock({ perKey: 16, perKeyUnderLoad: 4 })
    try {
      const user = { keyId: 'alice', workspaceId: 'team', kind: 'user' as const }
      // An intern of its own called a moment ago (and ended): not another party.
      ;(sut.enter({ keyId: 'intern-1', workspaceId: 'team', kind: 'intern' }) as () => void)()
      advance(100)
      const burst = Array.from({ length: 16 }, () => sut.enter(user))
      expect(burst.every((c) => typeof c === 'function')).toBe(true)
      for (const leave of burst) (leave as () => void)()
      // Another workspace's intern a moment ago: the squeeze holds.
      ;(sut.enter({ keyId: 'intern-x', workspaceId: 'other', kind: 'intern' }) as () => void)()
      advance(100)
      const squeezed = Array.from({ length: 5 }, () => sut.enter(user))
      expect(squeezed.at(-1)).toMatchObject({ message: expect.stringMatching(/share is 4 while/) })
      for (const leave of squeezed.slice(0, 4)) (leave as () => void)()
    } finally {
      close()
    }
  })

  it('counts a key that calls one at a time as about between its calls, for a second', () => {
    const { sut, advance, close } = loadedWithClock({ perKey: 16, perKeyUnderLoad: 4 })
    try {
      ;(sut.enter(caller('probe')) as () => void)() // one call, ended
      advance(500)
      const flood = Array.from({ length: 4 }, () => sut.enter(caller('flood')))
      expect(sut.enter(caller('flood'))).toMatchObject({ message: expect.stringMatching(/share is 4 while/) })
      advance(1_001) // the probe has not called for a second: the flood is alone
      expect(typeof sut.enter(caller('flood'))).toBe('function')
      for (const leave of flood) (leave as () => void)()
    } finally {
      close()
    }
  })

  it('holds the process to its body bytes, answering 503', () => {
    const sut = new Admission({ perKey: 0, perWorkspace: 0, bodyBytes: 100 })
    const big = sut.enter(caller('a'), 80)
    expect(sut.enter(caller('b'), 30)).toMatchObject({
      status: 503,
      message: expect.stringMatching(/REQUEST_BODY_BYTES/),
    })
    expect(typeof sut.enter(caller('b'), 20)).toBe('function')
    ;(big as () => void)()
    expect(typeof sut.enter(caller('b'), 30)).toBe('function')
  })
})

describe('Lru', () => {
  it('lets go of the entry used least recently, not all of them', () => {
    const sut = new Lru<string, number>(3)
    sut.set('a', 1)
    sut.set('b', 2)
    sut.set('c', 3)
    expect(sut.get('a')).toBe(1) // a is now the most recent
    sut.set('d', 4)
    expect([sut.has('a'), sut.has('b'), sut.has('c'), sut.has('d'), sut.size]).toEqual([true, false, true, true, 3])
  })
})
