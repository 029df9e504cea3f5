import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeIntern, makeTenant, useTestTenant } from '@roster/testing'
import { auth, buildTestApp, json } from './helpers.js'

// What the console reads beside the API's own operations (docs/console.md): interns and keys
// searched by name on the server (the text taken literally, in any case), and an intern's sessions
// as the record keeps them.
const env = useTestTenant()
let app: Awaited<ReturnType<typeof buildTestApp>>
beforeAll(async () => {
  app = await buildTestApp(env.t.db, { LIST_CACHE_MS: '0' })
})
afterAll(async () => app?.closeAll())

const get = async (path: string, key = env.tenant.keys.user) => {
  const res = await app.inject({ method: 'GET', url: `/api/v1${path}`, headers: auth(key) })
  return { status: res.statusCode, body: res.json() }
}

describe('GET /interns?q=', () => {
  it('finds interns whose name holds the text, in any case, paged with the cursor; the text is taken literally', async () => {
    for (const name of ['alpha-one', 'alpha-two', 'beta', 'xalphax']) await makeIntern(env.t.db, env.tenant, { name })
    const names = async (q: string) =>
      ((await get(`/interns?q=${encodeURIComponent(q)}`)).body.data as { name: string }[]).map((i) => i.name).sort()
    expect(await names('ALPHA')).toEqual(['alpha-one', 'alpha-two', 'xalphax'])
    expect(await names('  beta ')).toEqual(['beta'])
    // LIKE's own characters match themselves only (no intern's name holds them).
    expect(await names('%')).toEqual([])
    expect(await names('_')).toEqual([])
    expect(await names('alpha%one')).toEqual([])
    // Pages of a search keep to it.
    const first = await get('/interns?q=alpha&limit=2')
    expect(first.body.data).toHaveLength(2)
    expect(first.body.has_more).toBe(true)
    const next = await get(`/interns?q=alpha&limit=2&starting_after=${first.body.next_cursor}`)
    expect(next.body.data.map((i: { name: string }) => i.name)).toHaveLength(1)
    expect([...first.body.data, ...next.body.data].map((i: { name: string }) => i.name).sort()).toEqual(
      await names('alpha'),
    )
    // Another workspace's interns are not found by name.
    const stranger = await makeTenant(env.t.db)
    expect((await get('/interns?q=alpha', stranger.keys.user)).body.data).toEqual([])
  })

  it('refuses an empty or overlong search with 400', async () => {
    expect((await get('/interns?q=')).status).toBe(400)
    expect((await get('/interns?q=%20%20')).status).toBe(400)
    expect((await get(`/interns?q=${'a'.repeat(101)}`)).status).toBe(400)
  })
})

describe('GET /keys?q=', () => {
  it('finds keys whose name holds the text, taken literally, in the management key’s workspace only', async () => {
    const create = (name: string) =>
      app.inject({
        method: 'POST',
        url: '/api/v1/keys',
        headers: { ...auth(env.tenant.keys.management), ...json },
        payload: { name },
      })
    for (const name of ['Deploy 100%', 'deploy_bot', 'deploy bot', 'other'])
      expect((await create(name)).statusCode).toBe(201)
    const names = async (q: string, key = env.tenant.keys.management) =>
      ((await get(`/keys?q=${encodeURIComponent(q)}`, key)).body.data as { name: string }[]).map((k) => k.name).sort()
    expect(await names('DEPLOY')).toEqual(['Deploy 100%', 'deploy bot', 'deploy_bot'])
    expect(await names('100%')).toEqual(['Deploy 100%'])
    // (a label's random part may hold `_`, so the text searched for is longer)
    expect(await names('oy_b')).toEqual(['deploy_bot'])
    expect(await names('y%b')).toEqual([])
    const stranger = await makeTenant(env.t.db)
    expect(await names('deploy', stranger.keys.management)).toEqual([])
  })
})

describe('an intern’s sessions', () => {
  it('lists them, the latest first, with their first prompt as a title; a session shows its items in order', async () => {
    const intern = await makeIntern(env.t.db, env.tenant, { status: 'running' })
    const at = (s: number) => new Date(Date.UTC(2026, 10, 1, 0, 0, s))
    await env.t.db.sessionEntry.createMany({
      data: [
        {
          internId: intern.id,
          sessionId: 'older',
          seq: 0,
          item: { type: 'message', role: 'user', content: 'Count the files' },
          createdAt: at(1),
        },
        {
          internId: intern.id,
          sessionId: 'older',
          seq: 1,
          item: { type: 'message', role: 'assistant', content: 'Three.' },
          createdAt: at(2),
        },
        {
          internId: intern.id,
          sessionId: 'a/b c',
          seq: 0,
          item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Parts <b>joined</b>' }] },
          createdAt: at(3),
        },
        {
          internId: intern.id,
          sessionId: 'a/b c',
          seq: 1,
          item: {
            type: 'roster.interaction',
            id: 'ia_1',
            question: { kind: 'permission', operation: 'shell', options: ['allow_once'] },
          },
          createdAt: at(4),
        },
      ],
    })
    const list = await get(`/interns/${intern.id}/sessions`)
    expect(list.status).toBe(200)
    expect(list.body.data.map((s: { id: string; title: string; items: number }) => [s.id, s.title, s.items])).toEqual([
      ['a/b c', 'Parts <b>joined</b>', 2],
      ['older', 'Count the files', 2],
    ])
    const one = await get(`/interns/${intern.id}/sessions/${encodeURIComponent('a/b c')}`)
    expect(one.status).toBe(200)
    expect(one.body.truncated).toBe(false)
    expect(one.body.items.map((i: { seq: number; item: { type: string } }) => [i.seq, i.item.type])).toEqual([
      [0, 'message'],
      [1, 'roster.interaction'],
    ])
    // A session never written is empty, not an error (a chat would start it under that id).
    expect((await get(`/interns/${intern.id}/sessions/nothing-yet`)).body.items).toEqual([])
  })

  it('shows the last 500 items of a long session, saying earlier ones were left out', async () => {
    const intern = await makeIntern(env.t.db, env.tenant, { status: 'running' })
    await env.t.db.sessionEntry.createMany({
      data: Array.from({ length: 501 }, (_, seq) => ({
        internId: intern.id,
        sessionId: 'long',
        seq,
        item: { type: 'message', role: seq % 2 ? 'assistant' : 'user', content: `m${seq}` },
      })),
    })
    const one = await get(`/interns/${intern.id}/sessions/long`)
    expect(one.body.truncated).toBe(true)
    expect(one.body.items).toHaveLength(500)
    expect(one.body.items[0].seq).toBe(1)
    expect(one.body.items.at(-1).seq).toBe(500)
  })

  it('answers 404 for another workspace’s intern, and 401 without a key', async () => {
    const intern = await makeIntern(env.t.db, env.tenant, { status: 'running' })
    const stranger = await makeTenant(env.t.db)
    for (const path of [`/interns/${intern.id}/sessions`, `/interns/${intern.id}/sessions/older`]) {
      const res = await get(path, stranger.keys.user)
      expect(res.status).toBe(404)
      expect(res.body.error.metadata.reason).toBe('not_found')
      expect((await app.inject({ method: 'GET', url: `/api/v1${path}` })).statusCode).toBe(401)
    }
    expect((await get(`/interns/${intern.id}/sessions/${'x'.repeat(257)}`)).status).toBe(400)
  })
})
