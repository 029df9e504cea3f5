import { connect } from 'node:net'
import { once } from 'node:events'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InternLifecycleError } from '@roster/shared'
import { useTestTenant } from '@roster/testing'
import { buildTestApp } from './helpers.js'
import { MAX_JSON_DEPTH, nestsDeeperThan, unstorableText } from '../src/plugins/input-guards.js'

// What no route can take: text Postgres cannot store, JSON nested without end, paths the router
// refuses. Each is a documented 400/404 that changes nothing, never a 500 or Fastify's own body.
const env = useTestTenant()
let app: Awaited<ReturnType<typeof buildTestApp>>
let internId: string

beforeAll(async () => {
  app = await buildTestApp(env.t.db)
  internId = (await post('/api/v1/interns', { name: 'guarded' })).json().id
})
afterAll(async () => app?.closeAll())

const headers = (key = env.tenant.keys.user) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })
const post = (url: string, payload: unknown, key?: string) =>
  app.inject({
    method: 'POST',
    url,
    headers: headers(key),
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  })
const counts = async () =>
  JSON.stringify(
    await env.t.db
      .$queryRaw`SELECT (SELECT count(*)::int FROM interns) i, (SELECT max(updated_at) FROM interns) u, (SELECT count(*)::int FROM preset_versions) v`,
  )

function expectRefused(res: { statusCode: number; json(): any }, status: number, message: RegExp, intern = false) {
  expect(res.statusCode).toBe(status)
  const body = res.json()
  if (intern) InternLifecycleError.parse(body)
  expect(body.error.code).toBe(status)
  expect(body.error.message).toMatch(message)
}

describe('text Postgres cannot store', () => {
  it('a NUL or a lone surrogate in any string or key is 400 on every route that stores, and nothing is written', async () => {
    const before = await counts()
    const nul = /holds a NUL character or a lone surrogate/
    expectRefused(await post('/api/v1/interns', '{"name":"a\\u0000b"}'), 400, /the body at \/name holds a NUL/, true)
    expectRefused(await post('/api/v1/interns', '{"name":"ok-name","description":"\\ud800"}'), 400, nul, true)
    expectRefused(
      await app.inject({
        method: 'PATCH',
        url: `/api/v1/interns/${internId}`,
        headers: headers(),
        payload: '{"instructions":"x\\u0000"}',
      }),
      400,
      nul,
      true,
    )
    for (const door of ['responses', 'chat/completions', 'messages']) {
      expectRefused(
        await post(
          `/api/v1/presets/p-nul/${door}`,
          '{"model":"a/b","metadata":{"k\\u0000":"v"}}',
          env.tenant.keys.management,
        ),
        400,
        nul,
      )
      expectRefused(
        await post(`/api/v1/presets/p-nul/${door}`, '{"model":"a/\\udfffb"}', env.tenant.keys.management),
        400,
        nul,
      )
    }
    expectRefused(
      await app.inject({ method: 'GET', url: '/api/v1/interns?starting_after=%00', headers: headers() }),
      400,
      /the query parameter starting_after holds a NUL/,
      true,
    )
    expect(await counts()).toBe(before)
  })

  it('finds them anywhere, without recursion', () => {
    expect(unstorableText({ a: [1, { b: 'fine', c: ['x', 'y\u0000'] }] })).toBe('/a/1/c/1')
    expect(unstorableText({ 'k\u0000': 1 })).toBe('/k\\u0000')
    expect(unstorableText(['\ud83d'])).toBe('/0')
    expect(unstorableText({ ok: '\ud83d\ude00 emoji is whole' })).toBeUndefined()
  })
})

describe('JSON nested without end', () => {
  const deep = (n: number) => `{"model":"a/b","tools":${'['.repeat(n)}${']'.repeat(n)}}`

  it(`is 400 past ${MAX_JSON_DEPTH} levels on every JSON route, /responses and the preset creates included`, async () => {
    const before = await counts()
    const refusal = new RegExp(`nests deeper than ${MAX_JSON_DEPTH} levels`)
    expectRefused(await post('/api/v1/responses', deep(20_000)), 400, refusal)
    expectRefused(
      await post('/api/v1/presets/p-deep/responses', deep(20_000), env.tenant.keys.management),
      400,
      refusal,
    )
    expectRefused(await post('/api/v1/presets/p-deep/messages', deep(20_000), env.tenant.keys.management), 400, refusal)
    expectRefused(await post('/api/v1/interns', deep(20_000)), 400, refusal, true)
    expect(await counts()).toBe(before)
    // At the limit it is read as usual (and refused or served on its merits).
    expect((await post('/api/v1/responses', deep(MAX_JSON_DEPTH - 1))).json().error.message).not.toMatch(refusal)
  })

  it('is measured without recursion, and stops at the limit', () => {
    let value: unknown = 1
    for (let i = 0; i < 200_000; i++) value = [value]
    expect(nestsDeeperThan(value, 64)).toBe(true)
    expect(nestsDeeperThan({ a: { b: [1, [2]] } }, 4)).toBe(false)
    expect(nestsDeeperThan({ a: { b: [1, [2]] } }, 3)).toBe(true)
  })
})

describe('bodies that are not JSON', () => {
  it('bytes that are not UTF-8, broken syntax and prototype keys are 400 saying which; nothing is written', async () => {
    const before = await counts()
    const invalidUtf8 = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')])
    const send = (url: string, payload: string | Buffer) =>
      app.inject({ method: 'POST', url, headers: headers(), payload })
    expectRefused(await send('/api/v1/interns', invalidUtf8), 400, /the body is not valid UTF-8/, true)
    expectRefused(await send('/api/v1/chat/completions', invalidUtf8), 400, /the body is not valid UTF-8/)
    expectRefused(await send('/api/v1/interns', '{"name":'), 400, /the body is not valid JSON \(.+\)/, true)
    for (const poison of ['{"name":"p","__proto__":{"x":1}}', '{"name":"p","constructor":{"prototype":{"x":1}}}'])
      expectRefused(await send('/api/v1/interns', poison), 400, /"__proto__" or "constructor.prototype" key/, true)
    expect(await counts()).toBe(before)
    // UTF-8 that is well formed, in every plane, is read as sent.
    const named = await app.inject({
      method: 'POST',
      url: '/api/v1/keys',
      headers: headers(env.tenant.keys.management),
      payload: Buffer.from(JSON.stringify({ name: 'é 😀 名' }), 'utf8'),
    })
    expect(named.statusCode).toBe(201)
    expect(named.json().data.name).toBe('é 😀 名')
  })
})

describe("the router's refusals", () => {
  it('bad percent-encoding and over-long path segments answer in the documented body', async () => {
    for (const url of [
      `/api/v1/interns/%ff`,
      `/api/v1/interns/${'x'.repeat(600)}`,
      `/api/v1/presets/${'x'.repeat(600)}`,
      '/api/v1/presets/%ff/versions',
    ]) {
      const res = await app.inject({ method: 'GET', url, headers: headers() })
      expect(res.headers['content-type']).toMatch(/^application\/json/)
      expectRefused(res, 404, /no resource at this path/, true)
      expect(res.body).not.toMatch(/FST_ERR|statusCode/)
    }
  })
})

describe('requests that are not HTTP', () => {
  it("answer 400 (431 for oversized headers) in the documented body, not Node's or Fastify's", async () => {
    const address = new URL(await app.listen({ port: 0, host: '127.0.0.1' }))
    const raw = async (bytes: string) => {
      const socket = connect(Number(address.port), '127.0.0.1')
      await once(socket, 'connect')
      let text = ''
      socket.on('data', (c) => (text += c))
      socket.end(bytes)
      await once(socket, 'close')
      return { status: Number(text.split(' ')[1]), body: JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) }
    }
    const garbage = await raw('NOT HTTP AT ALL\r\n\r\n')
    expect(garbage.status).toBe(400)
    InternLifecycleError.parse(garbage.body)
    const huge = await raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`)
    expect(huge.status).toBe(431)
    expect(huge.body.error.code).toBe(431)
  })
})

describe('the OpenAPI document', () => {
  it("describes setInternIcon's body as image bytes and each preset create's body", async () => {
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
    const icon = doc.paths['/api/v1/interns/{internId}/icon'].put.requestBody.content
    expect(Object.keys(icon).sort()).toEqual(['image/gif', 'image/jpeg', 'image/png', 'image/webp'])
    for (const type of Object.values<any>(icon)) expect(type.schema).toEqual({ type: 'string', format: 'binary' })
    for (const door of ['responses', 'chat/completions', 'messages']) {
      const schema = doc.paths[`/api/v1/presets/{slug}/${door}`].post.requestBody.content['application/json'].schema
      expect(schema.type).toBe('object')
      expect(Object.keys(schema.properties)).toContain('model')
    }
    const chat =
      doc.paths['/api/v1/presets/{slug}/chat/completions'].post.requestBody.content['application/json'].schema
    expect(Object.keys(chat.properties)).toEqual(
      expect.arrayContaining(['messages', 'max_tokens', 'response_format', 'tools']),
    )
  })
})
