import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import { OutputItems$inboundSchema } from '@openrouter/sdk/models'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import type { Catalogue } from '@roster/gateway'
import { createApiKey, createUser, createWorkspace } from '@roster/shared'
import { makeTenant, useTestTenant, type Tenant } from '@roster/testing'
import { buildTestApp, simEndpoint, simModel } from './helpers.js'

// The Files API through the official client (`client.files`), and `openrouter:files` on the same
// files: a workspace's own, never another's; sizes and quotas held; bad input refused, changing nothing.
const env = useTestTenant()
let sim: Simulator
let app: Awaited<ReturnType<typeof buildTestApp>>
let baseURL: string
let other: Tenant
/** A user key of a second workspace of the test tenant's account. */
let sibling: { workspaceId: string; key: string }

const MAX = 4096
const QUOTA = 10_000

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 4 })
  const catalogue: Catalogue = { models: [simModel('roster-sim/chat', [simEndpoint(sim.url, 'openai-chat')])] }
  app = await buildTestApp(
    env.t.db,
    { FILES_MAX_BYTES: String(MAX), FILES_WORKSPACE_MAX_BYTES: String(QUOTA) },
    catalogue,
  )
  baseURL = `${await app.listen({ port: 0, host: '127.0.0.1' })}/api/v1`
  other = await makeTenant(env.t.db)
  const { workspace_id } = await createWorkspace(env.t.db, { accountId: env.tenant.accountId })
  const { user_id } = await createUser(env.t.db, { workspaceId: workspace_id })
  sibling = {
    workspaceId: workspace_id,
    key: (await createApiKey(env.t.db, { kind: 'user', workspaceId: workspace_id, userId: user_id })).key,
  }
})
afterAll(async () => {
  await app?.closeAll()
  await sim?.close()
})

const client = (key = env.tenant.keys.user) =>
  new OpenRouter({ apiKey: key, serverURL: baseURL, retryConfig: { strategy: 'none' } })
const call = (method: string, path: string, key = env.tenant.keys.user, body?: BodyInit, type?: string) =>
  fetch(`${baseURL}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(type ? { 'content-type': type } : {}) },
    ...(body ? { body } : {}),
  })
const upload = (name: string, content: string | Uint8Array<ArrayBuffer>, key = env.tenant.keys.user, query = '') => {
  const form = new FormData()
  form.append('file', new Blob([content]), name)
  return call('POST', `/files${query}`, key, form)
}
const readAll = async (stream: ReadableStream<Uint8Array>) => Buffer.from(await new Response(stream).arrayBuffer())

describe('the Files API', () => {
  it('uploads, lists, reads, downloads and deletes through the official client', async () => {
    const files = client().files
    const made = (await files.upload({
      requestBody: { file: { fileName: 'notes.md', content: Buffer.from('# Notes\nhello') } },
    })) as any
    expect(made).toMatchObject({
      shape: 'openrouter',
      type: 'file',
      filename: 'notes.md',
      sizeBytes: 13,
      downloadable: true,
    })
    expect(made.id).toMatch(/^file_/)
    const second = (await files.upload({
      requestBody: { file: { fileName: 'b.txt', content: Buffer.from('b') } },
    })) as any
    const page = (await files.list({ limit: 1 })) as any
    const first = page.result ?? page
    expect(first).toMatchObject({ shape: 'openrouter', hasMore: true, firstId: made.id, lastId: made.id })
    const rest = (await (await call('GET', `/files?limit=10&after=${made.id}`)).json()) as any
    expect(rest.data.map((f: any) => f.id)).toEqual([second.id])
    expect(rest).toMatchObject({ has_more: false, cursor: null })
    expect(await files.retrieve({ fileId: made.id })).toMatchObject({ id: made.id, mimeType: expect.any(String) })
    const content = await files.download({ fileId: made.id })
    expect((await readAll(content as ReadableStream<Uint8Array>)).toString()).toBe('# Notes\nhello')
    expect(await files.delete({ fileId: second.id })).toMatchObject({ id: second.id, type: 'file_deleted' })
    expect((await call('GET', `/files/${second.id}`)).status).toBe(404)
    await files.delete({ fileId: made.id })
  })

  it("never reaches another workspace's files, and lets only a management key name another of its account", async () => {
    const mine = (await (await upload('secret.txt', 'mine')).json()) as any
    for (const key of [other.keys.user, other.keys.management, sibling.key]) {
      for (const [method, path] of [
        ['GET', `/files/${mine.id}`],
        ['GET', `/files/${mine.id}/content`],
        ['DELETE', `/files/${mine.id}`],
      ] as const)
        expect((await call(method, path, key)).status, `${method} ${path}`).toBe(404)
      const listed = (await (await call('GET', '/files', key)).json()) as any
      expect(listed.data.map((f: any) => f.id)).not.toContain(mine.id)
    }
    // A user key naming another workspace is refused; a management key of the account reaches it; another account's cannot.
    expect((await call('GET', `/files?workspace_id=${sibling.workspaceId}`)).status).toBe(403)
    const asManager = await call('GET', `/files?workspace_id=${sibling.workspaceId}`, env.tenant.keys.management)
    expect(asManager.status).toBe(200)
    expect((await call('GET', `/files?workspace_id=${env.tenant.workspaceId}`, other.keys.management)).status).toBe(404)
    expect((await call('GET', `/files?workspace_id=not-a-uuid`, env.tenant.keys.management)).status).toBe(404)
    expect((await call('GET', `/files/${mine.id}`)).status).toBe(200)
    await call('DELETE', `/files/${mine.id}`)
  })

  it('refuses what it cannot take with the documented error, storing nothing', async () => {
    const before = await env.t.db.workspaceFile.count()
    const big = await upload('big.bin', new Uint8Array(MAX + 1))
    expect(big.status).toBe(413)
    expect(((await big.json()) as any).error.message).toMatch(/at most 4096 bytes/)
    const json = await call('POST', '/files', env.tenant.keys.user, '{"file":"x"}', 'application/json')
    expect(json.status).toBe(415)
    const form = new FormData()
    form.append('other', new Blob(['x']), 'x.txt')
    expect((await call('POST', '/files', env.tenant.keys.user, form)).status).toBe(400)
    expect((await upload('x.txt', 'x', env.tenant.keys.user, '?provider=openai')).status).toBe(400)
    expect((await call('GET', '/files?order=desc')).status).toBe(400)
    expect((await call('GET', '/files?limit=0')).status).toBe(400)
    expect((await call('GET', '/files', 'sk-or-v1-nope')).status).toBe(401)
    expect(await env.t.db.workspaceFile.count()).toBe(before)
    // The workspace's quota: uploads that fit pass, the one past it is refused.
    const made: string[] = []
    for (let i = 0; i < 2; i++) made.push(((await (await upload(`f${i}`, new Uint8Array(MAX))).json()) as any).id)
    const past = await upload('f3', new Uint8Array(MAX))
    expect(past.status).toBe(413)
    expect(((await past.json()) as any).error.message).toMatch(/delete some first/)
    for (const id of made) await call('DELETE', `/files/${id}`)
  })
})

describe('openrouter:files', () => {
  const run = async (script: string, key = env.tenant.keys.user) => {
    const res = await call(
      'POST',
      '/responses',
      key,
      JSON.stringify({ model: 'roster-sim/chat', input: script, tools: [{ type: 'openrouter:files' }] }),
      'application/json',
    )
    expect(res.status).toBe(200)
    return (await res.json()) as any
  }
  const step = (args: object) => `[sim] call files ${JSON.stringify(args)}`

  it('writes, lists, reads and edits (copy-on-write) the workspace files, each item read by the official client', async () => {
    const written = await run(
      [
        step({ operation: 'write', filename: 'plan.md', content: 'Ship on Monday.' }),
        step({ operation: 'list', filename: 'plan' }),
        step({ operation: 'read', filename: 'plan.md' }),
        step({ operation: 'edit', filename: 'plan.md', old_string: 'Monday', new_string: 'Friday' }),
        '[sim] say {{result}}',
      ].join('\n'),
    )
    const items = written.output.filter((o: any) => o.type === 'openrouter:files')
    expect(items.map((i: any) => i.operation)).toEqual(['write', 'list', 'read', 'edit'])
    for (const item of items) expect(OutputItems$inboundSchema.parse(item)).toMatchObject({ type: 'openrouter:files' })
    const created = JSON.parse(items[0].result)
    expect(created).toMatchObject({ filename: 'plan.md', size_bytes: 15 })
    expect(JSON.parse(items[1].result).files.map((f: any) => f.id)).toEqual([created.id])
    expect(JSON.parse(items[2].result).content).toBe('Ship on Monday.')
    const edited = JSON.parse(items[3].result)
    expect(edited).toMatchObject({ source_file_id: created.id, filename: 'plan.md' })
    expect(edited.id).not.toBe(created.id)
    // The original stays; the copy holds the edit; both are the Files API's.
    const original = await call('GET', `/files/${created.id}/content`)
    expect(await original.text()).toBe('Ship on Monday.')
    expect(await (await call('GET', `/files/${edited.id}/content`)).text()).toBe('Ship on Friday.')
    for (const id of [created.id, edited.id]) await call('DELETE', `/files/${id}`)
  })

  it("tells the model what went wrong, and never reaches another workspace's file", async () => {
    const theirs = (await (await upload('theirs.txt', 'private', other.keys.user)).json()) as any
    const binary = (await (await upload('blob.bin', new Uint8Array([0xff, 0xfe, 0, 1]))).json()) as any
    const res = await run(
      [
        step({ operation: 'read', file_id: theirs.id }),
        step({ operation: 'read', file_id: binary.id }),
        step({ operation: 'edit', file_id: binary.id, old_string: 'a', new_string: 'b' }),
        step({ operation: 'write', filename: '../escape', content: 'x' }),
        step({ operation: 'delete', file_id: binary.id }),
        '[sim] say done',
      ].join('\n'),
    )
    const errors = res.output.filter((o: any) => o.type === 'openrouter:files').map((i: any) => i.error)
    expect(errors).toEqual([
      `no file ${theirs.id} in this workspace`,
      'blob.bin is not a text file (UTF-8); only text files are read',
      'blob.bin is not a text file (UTF-8); only text files are edited',
      'write needs a filename (no slashes, at most 255 characters)',
      'operation must be one of list, read, write, edit',
    ])
    expect(JSON.stringify(res)).not.toContain('private')
    await call('DELETE', `/files/${theirs.id}`, other.keys.user)
    await call('DELETE', `/files/${binary.id}`)
  })
})
