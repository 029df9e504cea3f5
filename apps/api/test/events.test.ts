import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiClient, makeTenant, startStack, useTestTenant, type Stack } from '@roster/testing'

const env = useTestTenant()
let stack: Stack
beforeAll(async () => {
  stack = await startStack({ databaseUrl: env.t.url })
})
afterAll(async () => stack?.stop())

/** Reads server-sent events until `stop` says so (or the stream ends). */
async function collect(
  url: string,
  key: string,
  stop: (events: { event: string; data: any }[]) => boolean,
  /** Told when the first event has come: the stream is subscribed. */
  subscribed: () => void = () => {},
) {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
  const events: { event: string; data: any }[] = []
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline) {
    const { value, done } = await reader.read()
    if (done) break
    buffer += decoder.decode(value, { stream: true })
    let cut
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 2)
      const event = /^event: (.+)$/m.exec(block)?.[1]
      const data = /^data: (.+)$/m.exec(block)?.[1]
      if (event && data) events.push({ event, data: JSON.parse(data) })
    }
    if (events.length) subscribed()
    if (stop(events)) break
  }
  await reader.cancel().catch(() => {})
  return events
}

describe('GET /interns/{id}/events', () => {
  // Steps that pass faster than a read may merge into one event, so the test asks for order (never
  // backwards) and the final state, not for one event per step.
  it('streams the intern’s changes in order until it is running', async () => {
    const api = apiClient(stack.apiUrl, env.tenant.keys.user)
    const id = (await api.createIntern({ name: 'watched', provision: true })).body.id
    const events = await collect(
      `${stack.apiUrl}/interns/${id}/events`,
      env.tenant.keys.user,
      (e) => e.at(-1)?.data.status === 'running',
    )
    expect(events[0]!.event).toBe('intern')
    expect(events.at(-1)!.data).toMatchObject({ id, status: 'running', progress: null })
    expect(events.at(-1)!.data.hostname).toMatch(/^watched-/)
    const steps = events.filter((e) => e.data.status === 'provisioning').map((e) => e.data.progress.step_number)
    expect(steps).toEqual([...steps].sort((a, b) => a - b)) // never backwards
    // Every event is the same object GET answers.
    expect(Object.keys(events.at(-1)!.data).sort()).toEqual(Object.keys((await api.getIntern(id)).body).sort())
  })

  it('ends with a deleted event when the intern goes away', async () => {
    const api = apiClient(stack.apiUrl, env.tenant.keys.user)
    const id = (await api.createIntern({ name: 'goner' })).body.id
    let subscribed!: () => void
    const ready = new Promise<void>((resolve) => (subscribed = resolve))
    const streaming = collect(
      `${stack.apiUrl}/interns/${id}/events`,
      env.tenant.keys.user,
      (e) => e.some((x) => x.event === 'deleted'),
      subscribed,
    )
    await ready
    await fetch(`${stack.apiUrl}/interns/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${env.tenant.keys.user}` },
    })
    const events = await streaming
    expect(events.map((e) => e.data.status ?? e.event)).toContain('destroying')
    expect(events.at(-1)).toEqual({ event: 'deleted', data: { id } })
  })

  it('refuses before streaming: 404 in the error shape for an intern the key cannot see', async () => {
    const stranger = await makeTenant(env.t.db)
    const id = (await apiClient(stack.apiUrl, env.tenant.keys.user).createIntern({ name: 'private' })).body.id
    const res = await fetch(`${stack.apiUrl}/interns/${id}/events`, {
      headers: { authorization: `Bearer ${stranger.keys.user}` },
    })
    expect(res.status).toBe(404)
    expect((await res.json()).error.metadata.reason).toBe('not_found')
  })

  // The fuzzer's find: an empty or malformed id reached the database as a uuid cast (500).
  it.each(['', 'not-a-uuid'])('answers 404, not 500, for the malformed id %j', async (id) => {
    const res = await fetch(`${stack.apiUrl}/interns/${id}/events`, {
      headers: { authorization: `Bearer ${env.tenant.keys.user}` },
    })
    expect(res.status).toBe(404)
    expect((await res.json()).error.metadata.reason).toBe('not_found')
  })
})

describe('GET /interns/events?ids=…', () => {
  it('follows several interns on one stream; one the key cannot see is deleted at once, and the stream goes on', async () => {
    const api = apiClient(stack.apiUrl, env.tenant.keys.user)
    const stranger = await makeTenant(env.t.db)
    const mine = [
      (await api.createIntern({ name: 'pair-a' })).body.id,
      (await api.createIntern({ name: 'pair-b' })).body.id,
    ]
    const theirs = (await apiClient(stack.apiUrl, stranger.keys.user).createIntern({ name: 'theirs' })).body.id
    let subscribed!: () => void
    const ready = new Promise<void>((resolve) => (subscribed = resolve))
    const streaming = collect(
      `${stack.apiUrl}/interns/events?ids=${[...mine, theirs].join(',')}`,
      env.tenant.keys.user,
      (e) => e.some((x) => x.data.id === mine[1] && x.data.status === 'queued'),
      subscribed,
    )
    await ready
    await fetch(`${stack.apiUrl}/interns/${mine[1]}/provision`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: '{}',
    })
    const events = await streaming
    // Each of mine as it was, the stranger's as gone (nothing of it shown), then the change.
    expect(events.slice(0, 3).map((e) => [e.event, e.data.id, e.data.status])).toEqual([
      ['intern', mine[0], 'stopped'],
      ['intern', mine[1], 'stopped'],
      ['deleted', theirs, undefined],
    ])
    expect(events.find((e) => e.data.id === theirs && e.event === 'intern')).toBeUndefined()
    expect(events.at(-1)!.data).toMatchObject({ id: mine[1], status: 'queued' })
  })

  it('refuses a missing, malformed or overlong list of ids with 400', async () => {
    const ids = Array.from({ length: 101 }, () => crypto.randomUUID()).join(',')
    for (const query of ['', '?ids=', '?ids=not-a-uuid', `?ids=${ids}`]) {
      const res = await fetch(`${stack.apiUrl}/interns/events${query}`, {
        headers: { authorization: `Bearer ${env.tenant.keys.user}` },
      })
      expect(res.status, query).toBe(400)
      expect((await res.json()).error.code).toBe(400)
    }
  })
})
