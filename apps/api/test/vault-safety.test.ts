import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { catalogueFile, startStack, waitFor, type Stack, useTestTenant } from '@roster/testing'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'

// Secret values at rest and in logs, with the real processes logging everything (trace): a dump
// of every table plus every line the API and worker wrote holds none of them; deleting an intern
// deletes its vault and secrets.
const env = useTestTenant()
let stack: Stack
let sim: Simulator

beforeAll(async () => {
  // The simulator answers the model calls a provider key (BYOK) is used for.
  sim = await startSimulator({ replyTokens: 3 })
  stack = await startStack({
    databaseUrl: env.t.url,
    env: { LOG_LEVEL: 'trace', MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)) },
  })
})
afterAll(async () => {
  await stack?.stop()
  await sim?.close()
})

const call = (method: string, path: string, body?: unknown) =>
  fetch(`${stack.apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${env.tenant.keys.user}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  })

describe('secret values', () => {
  it('never appear in a dump of the database or in any log line; an intern deleted takes its secrets with it', async () => {
    const values = Array.from({ length: 3 }, () => `sv-${randomBytes(12).toString('hex')}`)
    const intern = await (await call('POST', '/interns', { name: 'keeper', provision: true })).json()
    await waitFor(async () => (await (await call('GET', `/interns/${intern.id}`)).json()).status === 'running', {
      timeoutMs: 20_000,
      what: 'the intern to run',
    })
    expect(
      (await call('PUT', '/vault/secrets/ws_secret', { value: values[0], hosts: ['api.example.com'] })).status,
    ).toBe(200)
    expect(
      (
        await call('PUT', `/vault/interns/${intern.id}/secrets/own_secret`, {
          value: values[1],
          hosts: ['api.example.com'],
        })
      ).status,
    ).toBe(200)
    expect((await call('POST', `/vault/interns/${intern.id}/secrets/copy`, { names: ['ws_secret'] })).status).toBe(200)
    // A refused store with a value in it: the value is not logged either.
    expect(
      (
        await call('PUT', `/vault/interns/${intern.id}/secrets/Bad-Name`, {
          value: values[2],
          hosts: ['api.example.com'],
        })
      ).status,
    ).toBe(400)
    for (const path of [
      '/vault/secrets',
      `/vault/interns/${intern.id}/secrets`,
      `/vault/interns/${intern.id}/effective-secrets`,
    ]) {
      const text = await (await call('GET', path)).text()
      for (const v of values) expect(text).not.toContain(v)
    }

    const dump = execFileSync('pg_dump', ['--data-only', '--no-owner', env.t.url], {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    expect(dump).toContain('ws_secret')
    const logs = stack.api.output + stack.workers.map((w) => w.output).join('')
    expect(logs.length).toBeGreaterThan(1000)
    for (const v of values) {
      expect(dump).not.toContain(v)
      expect(dump).not.toContain(Buffer.from(v).toString('hex'))
      expect(logs).not.toContain(v)
    }

    const vaultId = intern.vault_id as string
    expect((await call('DELETE', `/interns/${intern.id}`)).status).toBe(202)
    await waitFor(async () => (await call('GET', `/interns/${intern.id}`)).status === 404, {
      timeoutMs: 20_000,
      what: 'the intern to be deleted',
    })
    const left = await env.t.db.$queryRaw<
      { n: number }[]
    >`SELECT (SELECT count(*)::int FROM vault_secrets WHERE vault_id = ${vaultId}::uuid) + (SELECT count(*)::int FROM vaults WHERE id = ${vaultId}::uuid) AS n`
    expect(left[0]!.n).toBe(0)
    // The workspace's own secret stays.
    expect((await (await call('GET', '/vault/secrets')).json()).data.map((s: { name: string }) => s.name)).toEqual([
      'ws_secret',
    ])
  })

  it('never shows a provider key (BYOK) or a destination’s secret header in a dump, a log line or an answer, though the key is used', async () => {
    const byok = `sk-byok-${randomBytes(12).toString('hex')}`
    const before = sim.stats.credentials.length
    const header = `hdr-${randomBytes(12).toString('hex')}`
    const admin = (method: string, path: string, body?: unknown) =>
      fetch(`${stack.apiUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${env.tenant.keys.management}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    const answers: string[] = []
    const made = await admin('POST', '/byok', { provider: 'upstream-sim', key: byok })
    expect(made.status).toBe(201)
    answers.push(await made.text())
    // A refused rotation (too long) with the value in it: not logged either.
    answers.push(
      await (
        await admin('PATCH', `/byok/${JSON.parse(answers[0]!).data.id}`, { key: `${byok}${'x'.repeat(9000)}` })
      ).text(),
    )
    const dest = await admin('POST', '/observability/destinations', {
      name: 'hook',
      type: 'webhook',
      config: { url: 'http://127.0.0.1:9/hook', headers: { authorization: header } },
    })
    expect(dest.status).toBe(201)
    answers.push(await dest.text(), await (await admin('GET', '/byok')).text())
    answers.push(await (await admin('GET', '/observability/destinations')).text())
    // The key is used: a model call through the workspace's own key.
    const res = await call('POST', '/chat/completions', {
      model: 'roster-sim/chat',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(res.status).toBe(200)
    const body = await res.json()
    expect(body.usage.is_byok).toBe(true)
    // It reached the provider, and only there.
    expect(sim.stats.credentials.slice(before)).toEqual([byok])
    answers.push(JSON.stringify(body))

    const dump = execFileSync('pg_dump', ['--data-only', '--no-owner', env.t.url], {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    expect(dump).toContain('upstream-sim')
    const logs = stack.api.output + stack.workers.map((w) => w.output).join('')
    for (const v of [byok, header]) {
      expect(dump).not.toContain(v)
      expect(dump).not.toContain(Buffer.from(v).toString('hex'))
      expect(logs).not.toContain(v)
      for (const a of answers) expect(a).not.toContain(v)
    }
    await admin('DELETE', `/byok/${JSON.parse(answers[0]!).data.id}`)
  })
})
