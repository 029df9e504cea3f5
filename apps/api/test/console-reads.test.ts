import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { InternReader } from '@roster/shared/interns'
import { insertGenerations } from '@roster/shared/repositories'
import { generationRecord, makeIntern, makeInternKey, makeTenant, useTestTenant } from '@roster/testing'
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

describe('GET /generations', () => {
  it('searches the account’s generations (a management key) or the key’s own, newest first, by session, key, model and time, with a cursor', async () => {
    const t = await makeTenant(env.t.db)
    const keyOf = async (key: string) =>
      env.t.db.apiKey.findFirstOrThrow({ where: { hash: createHash('sha256').update(key).digest() } })
    const user = await keyOf(t.keys.user)
    const org = await keyOf(t.keys.organization)
    const base = Date.UTC(2026, 10, 20, 12)
    await insertGenerations(
      env.t.db,
      Array.from({ length: 6 }, (_, i) =>
        generationRecord({
          id: `gen-search-${i}`,
          created_at: new Date(base + i * 60_000).toISOString(),
          account_id: t.accountId,
          workspace_id: t.workspaceId,
          key_id: i % 2 ? org.id : user.id,
          model: i < 3 ? 'sim/a' : 'sim/b',
          session_id: i % 3 === 0 ? 'ses-x' : null,
          cost_pico: String(1_000_000 * (i + 1)),
          // Two of them failed; one came by Chat Completions, one by Messages.
          ...(i === 1 || i === 4 ? { finish_reason: 'error' } : {}),
          ...(i === 2 ? { id: 'resp_search-2', door: 'chat_completions' } : {}),
          ...(i === 3 ? { id: 'resp_search-3', door: 'messages' } : {}),
        }),
      ),
    )
    const ids = async (query: string, key = t.keys.management) => {
      const res = await get(`/generations${query}`, key)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      return (res.body.data as { id: string }[]).map((g) => g.id)
    }
    const named = (i: number) => (i === 2 || i === 3 ? `resp_search-${i}` : `gen-search-${i}`)
    expect(await ids('')).toEqual([5, 4, 3, 2, 1, 0].map(named))
    expect(await ids('?session_id=ses-x')).toEqual([named(3), named(0)])
    expect(await ids('?model=sim/a')).toEqual([named(2), named(1), named(0)])
    expect(await ids(`?key=${user.number}`)).toEqual([named(4), named(2), named(0)])
    expect(await ids(`?key=${Buffer.from(user.hash).toString('hex')}`)).toEqual(await ids(`?key=${user.number}`))
    const from = new Date(base + 60_000).toISOString()
    const to = new Date(base + 3 * 60_000).toISOString()
    expect(await ids(`?from=${from}&to=${to}`)).toEqual([named(2), named(1)])
    // The calls that failed; and each with the id its client got and its key's name.
    expect(await ids('?status=error')).toEqual([named(4), named(1)])
    expect(await ids('?status=error&id=gen-search-5')).toEqual([])
    const listed = (await get('/generations', t.keys.management)).body.data as any[]
    expect(listed.map((g) => g.client_id)).toEqual([
      'gen-search-5',
      'gen-search-4',
      'msg_search-3',
      'chatcmpl-search-2',
      'gen-search-1',
      'gen-search-0',
    ])
    const names = await env.t.db.apiKey.findMany({ where: { id: { in: [user.id, org.id] } } })
    expect(listed[0].api_key_name).toBe(names.find((k) => k.id === org.id)!.name)
    expect(await ids('?id=chatcmpl-search-2')).toEqual([named(2)])
    expect(await ids('?id=gen-search-4')).toEqual(['gen-search-4'])
    // A user key finds its own calls only, and may not ask for another key's.
    expect(await ids('', t.keys.user)).toEqual([named(4), named(2), named(0)])
    expect(await ids('?id=gen-search-5', t.keys.user)).toEqual([])
    expect((await get(`/generations?key=${org.number}`, t.keys.user)).status).toBe(403)
    // Pages of two, the cursor leading through all six once.
    const seen: string[] = []
    let cursor = ''
    for (;;) {
      const page = await get(`/generations?limit=2${cursor ? `&cursor=${cursor}` : ''}`, t.keys.management)
      seen.push(...page.body.data.map((g: { id: string }) => g.id))
      if (!page.body.has_more) break
      cursor = page.body.next_cursor
    }
    expect(seen).toEqual(await ids(''))
    // Each carries its cost, tokens, key and provider attempts.
    const one = (await get('/generations?id=gen-search-5', t.keys.management)).body.data[0]
    expect(one).toMatchObject({ id: 'gen-search-5', total_cost: 0.000006, api_key_number: Number(org.number) })
    expect(Array.isArray(one.provider_responses)).toBe(true)
    // Another account sees none of them.
    expect(await ids('', env.tenant.keys.management)).not.toContain('gen-search-0')
    for (const bad of [
      '?cursor=nope',
      `?from=${to}&to=${from}`,
      '?limit=500',
      '?key=abc',
      '?from=yesterday',
      '?status=ok',
    ])
      expect((await get(`/generations${bad}`, t.keys.management)).status, bad).toBe(400)
  })
})

describe('GET /interns/questions', () => {
  it('lists the questions still waiting for an answer: not answered or ended, not past the deadline, of running interns the key can see', async () => {
    const t = await makeTenant(env.t.db)
    const running = await makeIntern(env.t.db, t, { status: 'running', name: 'asker' })
    const other = await makeIntern(env.t.db, t, { status: 'running', name: 'other-asker' })
    const stopped = await makeIntern(env.t.db, t, { status: 'stopped', name: 'stopped-asker' })
    const stranger = await makeTenant(env.t.db)
    const theirs = await makeIntern(env.t.db, stranger, { status: 'running', name: 'their-asker' })
    const now = Date.now()
    const question = { kind: 'permission', operation: 'shell', options: ['allow_once', 'reject_once'] }
    const asked = (internId: string, sessionId: string, seq: number, id: string, agoMs = 1_000) => ({
      internId,
      sessionId,
      seq,
      item: { type: 'roster.interaction', id, question },
      createdAt: new Date(now - agoMs),
    })
    await env.t.db.sessionEntry.createMany({
      data: [
        asked(running.id, 's1', 0, 'ia_open'),
        asked(running.id, 's2', 0, 'ia_answered'),
        {
          internId: running.id,
          sessionId: 's2',
          seq: 1,
          item: { type: 'roster.interaction_closed', id: 'ia_answered', outcome: 'answered' },
        },
        asked(running.id, 's3', 0, 'ia_ended'),
        {
          internId: running.id,
          sessionId: 's3',
          seq: 1,
          item: { type: 'roster.interaction_closed', id: 'ia_ended', outcome: 'ended' },
        },
        asked(running.id, 's4', 0, 'ia_too_old', 301_000),
        asked(other.id, 's1', 0, 'ia_other', 2_000),
        asked(stopped.id, 's1', 0, 'ia_stopped'),
        asked(theirs.id, 's1', 0, 'ia_theirs'),
      ],
    })
    const res = await get('/interns/questions', t.keys.user)
    expect(res.status).toBe(200)
    expect(res.body.data.map((q: { interaction_id: string }) => q.interaction_id)).toEqual(['ia_open', 'ia_other'])
    expect(res.body.data[0]).toMatchObject({
      intern_id: running.id,
      intern_name: 'asker',
      session_id: 's1',
      question,
    })
    expect(Date.parse(res.body.data[0].expires_at) - Date.parse(res.body.data[0].asked_at)).toBe(300_000)
    // An intern's own key sees its own questions only.
    const internKey = await makeInternKey(env.t.db, t.workspaceId, other.id)
    const own = await get('/interns/questions', internKey)
    expect(own.body.data.map((q: { interaction_id: string }) => q.interaction_id)).toEqual(['ia_other'])
    expect((await get('/interns/questions', t.keys.management)).status).toBe(401)
  })
})

describe('GET /keys/{hash}/limits', () => {
  it('lists every limit a key counts against with what is left, and which binds', async () => {
    const t = await makeTenant(env.t.db)
    const call = async (method: string, path: string, body?: unknown, key = t.keys.management) => {
      const res = await app.inject({
        method: method as 'GET',
        url: `/api/v1${path}`,
        headers: { ...auth(key), ...(body === undefined ? {} : json) },
        payload: body === undefined ? undefined : JSON.stringify(body),
      })
      return { status: res.statusCode, body: res.json() }
    }
    const made = await call('POST', '/keys', {
      name: 'bounded',
      limit: 10,
      limit_reset: 'monthly',
      creator_user_id: t.userId,
    })
    expect(made.status).toBe(201)
    const hash = made.body.data.hash as string
    const g = await call('POST', '/guardrails', { name: 'tight', limit_usd: 5, reset_interval: 'daily' })
    expect(g.status, JSON.stringify(g.body)).toBe(201)
    expect((await call('POST', `/guardrails/${g.body.data.id}/assignments/keys`, { key_hashes: [hash] })).status).toBe(
      200,
    )
    expect((await call('PUT', `/workspaces/${t.workspaceId}/budgets/monthly`, { limit_usd: 100 })).status).toBe(200)
    const key = await env.t.db.apiKey.findFirstOrThrow({ where: { hash: Buffer.from(hash, 'hex') } })
    await insertGenerations(env.t.db, [
      generationRecord({
        id: `limits-${hash.slice(0, 8)}`,
        created_at: new Date().toISOString(),
        account_id: t.accountId,
        workspace_id: t.workspaceId,
        key_id: key.id,
        user_id: t.userId,
        cost_pico: String(2n * 10n ** 12n),
      }),
    ])
    const res = await call('GET', `/keys/${hash}/limits`)
    expect(res.status).toBe(200)
    const byKind = Object.fromEntries(
      (res.body.data as { of: string; remaining_usd: number; binds: boolean; spent_usd: number }[]).map((l) => [
        l.of,
        l,
      ]),
    )
    expect(byKind.key).toMatchObject({ limit_usd: 10, spent_usd: 2, remaining_usd: 8, binds: false })
    expect(byKind.guardrail).toMatchObject({ name: 'tight', limit_usd: 5, remaining_usd: 3, binds: true })
    expect(byKind.workspace).toMatchObject({ limit_usd: 100, remaining_usd: 98, binds: false })
    // Another account's key, or a key that is not a management key asking: refused.
    const stranger = await makeTenant(env.t.db)
    expect((await call('GET', `/keys/${hash}/limits`, undefined, stranger.keys.management)).status).toBe(404)
    expect((await call('GET', `/keys/${hash}/limits`, undefined, t.keys.user)).status).toBe(401)
  })
})

describe('InternReader.getMany (the event streams’ reads)', () => {
  it('answers in the order asked, undefined for none, keeping what it read until a change evicts it', async () => {
    const reader = new InternReader(env.t.db, 60_000, () => true)
    const a = await makeIntern(env.t.db, env.tenant, { name: 'many-a' })
    const b = await makeIntern(env.t.db, env.tenant, { name: 'many-b' })
    const none = crypto.randomUUID()
    expect((await reader.getMany([b.id, none, a.id])).map((r) => r?.name)).toEqual(['many-b', undefined, 'many-a'])
    await env.t.db.intern.update({ where: { id: a.id }, data: { name: 'many-a2' } })
    // Kept: the same answer without a read, until the change is heard.
    expect((await reader.getMany([a.id]))[0]?.name).toBe('many-a')
    reader.evict([a.id])
    expect((await reader.getMany([a.id, b.id])).map((r) => r?.name)).toEqual(['many-a2', 'many-b'])
  })
})
