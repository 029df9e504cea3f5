import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { catalogueFile, startStack, waitFor, type Stack, useTestTenant } from '@roster/testing'

// An intern with no model of its own runs the interns' default, which the API decides (its
// INTERN_DEFAULT_MODEL, else the catalogue's best: its first model that calls tools) and tells each
// runtime host as it joins: no host setting needed. The console's session names it.
const env = useTestTenant()
let sim: Simulator
let stack: Stack

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 3 })
  const demo = simulatorCatalogue(sim.url)
  // Best first: the Responses model leads, so the default is not the simulator's chat model the
  // runtime would fall back to.
  const responsesFirst = { models: [...demo.models].sort((a) => (a.id === 'roster-sim/responses' ? -1 : 1)) }
  stack = await startStack({ databaseUrl: env.t.url, env: { MODEL_CATALOGUE: catalogueFile(responsesFirst) } })
}, 60_000)
afterAll(async () => {
  await stack?.stop()
  await sim?.close()
})

const call = (path: string, init: RequestInit = {}) =>
  fetch(`${stack.apiUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json', ...init.headers },
  })

describe('the interns’ default model', () => {
  it('is the catalogue’s best when none is set, told to the hosts by the API, and named to the console', async () => {
    const intern = (await (
      await call('/interns', { method: 'POST', body: JSON.stringify({ name: 'defaulted', provision: true }) })
    ).json()) as { id: string; model: string | null }
    expect(intern.model).toBeNull()
    await waitFor(
      async () => ((await (await call(`/interns/${intern.id}`)).json()) as { status: string }).status === 'running',
      { timeoutMs: 60_000, what: 'the intern to run' },
    )
    const before = sim.stats.requests['/v1/responses'] ?? 0
    const chat = await call(`/interns/${intern.id}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: '[sim] say Defaulted.' }] }),
    })
    expect(chat.status).toBe(200)
    expect(await chat.text()).toContain('Defaulted.')
    // Its model call went to the Responses model's endpoint.
    expect(sim.stats.requests['/v1/responses'] ?? 0).toBeGreaterThan(before)
    const made = await env.t.db.generation.findFirst({ where: { internId: intern.id }, orderBy: { createdAt: 'desc' } })
    expect(made?.model).toBe('roster-sim/responses')

    // The console's session names it (the intern page shows it for an intern without a model).
    const origin = new URL(stack.apiUrl).origin
    const signIn = await fetch(`${stack.apiUrl}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin, 'x-roster-console': '1' },
      body: JSON.stringify({ key: env.tenant.keys.user }),
    })
    expect(signIn.status, await signIn.clone().text()).toBe(201)
    expect(await signIn.json()).toMatchObject({ intern_default_model: 'roster-sim/responses' })
  })
})
