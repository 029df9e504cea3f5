import { afterAll, beforeAll, expect, it } from 'vitest'
import Fastify from 'fastify'
import { consoleLane } from './lane.js'

// The console's lane on a bare server: requests with the session cookie (and the console's files)
// take turns, one at a time here; an API client's request, and a stream, never wait in it.
// Connections closed by force at the end: the request whose client left mid-way leaves its
// connection to the server's own shutdown cut (as the API's main does after its grace).
const app = Fastify({ forceCloseConnections: true })
const lane = consoleLane(1)
let base = ''
let inside = 0
let most = 0
const releases: (() => void)[] = []
const hold = () =>
  new Promise<void>((resolve) => {
    inside++
    most = Math.max(most, inside)
    releases.push(() => {
      inside--
      resolve()
    })
  })

beforeAll(async () => {
  app.addHook('onRequest', lane)
  app.get('/api/v1/slow', async () => {
    await hold()
    return { ok: true }
  })
  app.get('/api/v1/interns/events', async () => {
    await hold()
    return { ok: true }
  })
  base = await app.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  await app.close()
})

const cookie = { cookie: 'roster_session=abc' }
const until = async (what: () => boolean) => {
  for (let i = 0; i < 500 && !what(); i++) await new Promise((r) => setTimeout(r, 2))
  expect(what()).toBe(true)
}

it('lets one console request in at a time, and never holds an API client or a stream', async () => {
  const consoleCalls = [1, 2, 3].map(() => fetch(`${base}/api/v1/slow`, { headers: cookie }))
  await until(() => inside === 1)
  // An API client (a key in a header) and a stream go straight in beside it.
  const client = fetch(`${base}/api/v1/slow`, { headers: { ...cookie, authorization: 'Bearer sk-x' } })
  const stream = fetch(`${base}/api/v1/interns/events`, { headers: cookie })
  await until(() => inside === 3)
  // The other console calls wait for the one in the lane: each is let in as the one before ends.
  const all = Promise.all([...consoleCalls, client, stream])
  let finished = false
  void all.then(() => (finished = true))
  while (!finished) {
    releases.shift()?.()
    await new Promise((r) => setImmediate(r))
  }
  for (const res of await all) expect([res.status, await res.text()]).toEqual([200, '{"ok":true}'])
  // At most the lane's one, the client's and the stream's at once.
  expect(most).toBe(3)
})

it('runs nothing for a request whose client left while it waited its turn, and frees its slot', async () => {
  const first = fetch(`${base}/api/v1/slow`, { headers: cookie })
  await until(() => inside === 1)
  // Another console request waits; its client gives up.
  const leaving = new AbortController()
  const gone = fetch(`${base}/api/v1/slow`, { headers: cookie, signal: leaving.signal }).catch(() => 'left')
  await until(() => lane.waiting() === 1)
  leaving.abort()
  expect(await gone).toBe('left')
  releases.shift()!()
  expect(await (await first).text()).toBe('{"ok":true}')
  // The one that left is not run at all; the lane is free.
  const next = fetch(`${base}/api/v1/slow`, { headers: cookie })
  await until(() => releases.length === 1)
  releases.shift()!()
  expect(await (await next).text()).toBe('{"ok":true}')
})
