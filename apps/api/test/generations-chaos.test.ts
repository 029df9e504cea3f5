import { expect, it, onTestFinished } from 'vitest'
import pg from 'pg'
import { OpenRouter } from '@openrouter/sdk'
import { startSimulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { catalogueFile, describeNeeding, startRedisServer, startStack, useTestTenant, waitFor } from '@roster/testing'
import { Redis } from 'ioredis'
import { generationsStream, hashApiKey } from '@roster/shared'

/** A flat [key, value, key, value…] reply as pairs. */
const pairs = (flat: unknown[]) => Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i], flat[2 * i + 1]])

// Accounting under chaos: clients call the doors without pause on three keys while an API process
// is killed (SIGKILL) and started again, Redis is killed and started again (from its append-only
// file, as docker-compose.yml runs it), and Postgres drops every connection of Roster's and refuses
// new ones for a while (what a restart looks like from outside). Afterwards every reply a client
// got whole is a generation, and each key's, workspace's and account's spend is the exact sum of
// its generations' costs: nothing lost, nothing counted twice.
const env = useTestTenant()

await describeNeeding(['redis-server'], 'the generations ledger under chaos', () => {
  it('accounts every reply a client got, and the sums hold, through an API SIGKILL, a Redis kill and a Postgres outage', async () => {
    const redis = await startRedisServer({ persist: true })
    onTestFinished(() => redis.stop())
    const sim = await startSimulator({ replyTokens: 4 })
    onTestFinished(() => sim.close())
    // Roster's own connections carry a name, so the outage can drop them and leave the test's.
    const databaseUrl = `${env.t.url}${env.t.url.includes('?') ? '&' : '?'}application_name=roster-chaos`
    const stack = await startStack({
      databaseUrl,
      redisUrl: redis.url,
      apis: 2,
      env: { MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)), AUTH_CACHE_MS: '60000' },
    })
    onTestFinished(() => stack.stop())
    const admin = new OpenRouter({
      apiKey: env.tenant.keys.management,
      serverURL: stack.apiUrls[1]!,
      retryConfig: { strategy: 'none' },
    })
    const keys = await Promise.all(
      ['one', 'two', 'three'].map(async (name) => (await admin.apiKeys.create({ requestBody: { name } })).key),
    )

    const delivered = new Set<string>()
    const failures = new Map<string, number>()
    let loading = true
    const calls = [
      { path: '/chat/completions', stream: false, body: { messages: [{ role: 'user', content: 'hi' }] } },
      { path: '/chat/completions', stream: true, body: { messages: [{ role: 'user', content: 'hi' }] } },
      { path: '/responses', stream: false, body: { input: 'hi' } },
      { path: '/responses', stream: true, body: { input: 'hi' } },
    ]
    const client = async (n: number) => {
      for (let i = n; loading; i++) {
        const call = calls[i % calls.length]!
        const key = keys[i % keys.length]!
        const base = stack.apiUrls[i % stack.apiUrls.length]!
        try {
          const res = await fetch(`${base}${call.path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'roster-sim/chat', stream: call.stream, ...call.body }),
            signal: AbortSignal.timeout(10_000),
          })
          const text = await res.text()
          const whole = call.stream
            ? /data: \[DONE\]|"type":"response\.completed"/.test(text.slice(-2_000))
            : res.status === 200
          if (res.status === 200 && whole) {
            delivered.add(/"id":"((?:resp_|chatcmpl-)[^"]+)"/.exec(text)![1]!)
          } else {
            failures.set(String(res.status), (failures.get(String(res.status)) ?? 0) + 1)
          }
        } catch (err) {
          const name = (err as Error).name
          failures.set(name, (failures.get(name) ?? 0) + 1)
          // A refused connection (the API down) answers at once: do not spin on it.
          await new Promise((r) => setTimeout(r, 20))
        }
      }
    }
    const load = Promise.all(Array.from({ length: 8 }, (_, n) => client(n)))
    const count = () => delivered.size
    const moreDelivered = async (what: string) => {
      const from = count()
      await waitFor(() => count() >= from + 20, { timeoutMs: 20_000, what: `replies after ${what}` })
    }
    const admin2 = new pg.Client({ connectionString: env.t.url.replace(/\/[^/?]+(\?|$)/, '/postgres$1') })
    await admin2.connect()
    onTestFinished(() => admin2.end())
    const database = new URL(env.t.url).pathname.slice(1)
    try {
      await moreDelivered('the start')

      // An API process killed without warning, under load, then started again.
      await stack.api.kill('SIGKILL')
      await moreDelivered('the API was killed')
      stack.api.start()
      await stack.api.waitForOutput(/listening/)

      // Redis killed and started again (from its append-only file).
      await redis.stop()
      await moreDelivered('Redis was killed')
      await redis.start()
      await moreDelivered('Redis came back')
      // Each API on Redis again before Postgres goes: with both away at once a reply fails (500)
      // rather than go out unaccounted, which is not what this test is about.
      for (const url of stack.apiUrls)
        await waitFor(async () => (await fetch(url.replace('/api/v1', '/ready')).catch(() => undefined))?.ok === true, {
          timeoutMs: 10_000,
          what: `${url} ready`,
        })

      // Postgres: every Roster connection dropped, new ones refused for two seconds.
      await admin2.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS false`)
      await admin2.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'roster-chaos'`,
        [database],
      )
      // Away while the load goes on (replies are accounted to Redis meanwhile), then back.
      await moreDelivered('Postgres went away')
      await admin2.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`)
      await moreDelivered('Postgres came back')
    } finally {
      await admin2.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`).catch(() => {})
      loading = false
      await load
    }

    // Every reply a client got whole is a generation, once the drain has caught up.
    // Stored under the Responses form of the id (a chat completion's is the same call's).
    const ids = [...delivered].map((id) => (id.startsWith('chatcmpl-') ? `resp_${id.slice('chatcmpl-'.length)}` : id))
    await waitFor(async () => (await env.t.db.generation.count({ where: { id: { in: ids } } })) === ids.length, {
      timeoutMs: 30_000,
      what: `all ${ids.length} delivered replies accounted`,
    })
    // And the drain is done: its group has read every entry of the stream and holds none unwritten.
    const streamReader = new Redis(redis.url)
    onTestFinished(() => void streamReader.quit())
    await waitFor(
      async () => {
        const groups = (await streamReader.call(
          'XINFO',
          'GROUPS',
          generationsStream(stack.env.QUEUE_PREFIX!),
        )) as unknown[][]
        const drain = groups.map((g) => Object.fromEntries(pairs(g))).find((g) => g.name === 'drain')
        return drain?.pending === 0 && drain?.lag === 0
      },
      { timeoutMs: 30_000, what: 'the drain to settle' },
    )
    // Each owner's spend is the exact sum of its generations' costs.
    const owners = await env.t.db.$queryRaw<{ owner: string; ledger: string; spend: string }[]>`
      WITH o AS (
        SELECT key_id AS owner, cost_pico FROM generations WHERE account_id = ${env.tenant.accountId}::uuid
        UNION ALL SELECT workspace_id, cost_pico FROM generations WHERE account_id = ${env.tenant.accountId}::uuid
        UNION ALL SELECT account_id, cost_pico FROM generations WHERE account_id = ${env.tenant.accountId}::uuid)
      SELECT o.owner::text, sum(o.cost_pico)::text AS ledger, s.credits_pico::text AS spend
      FROM o JOIN spend s ON s.owner_id = o.owner AND s.period = 'all'
      GROUP BY o.owner, s.credits_pico`
    expect(owners.length).toBe(keys.length + 2)
    for (const o of owners) expect(o.spend, o.owner).toBe(o.ledger)
    // And each key's usage, read back through the official client, is that sum to the pico-dollar.
    for (const key of keys) {
      const me = (
        await new OpenRouter({
          apiKey: key,
          serverURL: stack.apiUrl,
          retryConfig: { strategy: 'none' },
        }).apiKeys.getCurrentKeyMetadata()
      ).data
      const keyRow = await env.t.db.apiKey.findUnique({ where: { hash: new Uint8Array(hashApiKey(key)) } })
      const sum = await env.t.db.generation.aggregate({ where: { keyId: keyRow!.id }, _sum: { costPico: true } })
      expect(sum._sum.costPico).toBeGreaterThan(0n)
      expect(me.usage).toBe(Number(sum._sum.costPico) / 1e12)
    }
    console.log(
      `generations chaos: ${ids.length} replies delivered and accounted; refused or cut: ${JSON.stringify(Object.fromEntries(failures))}`,
    )
  })
})
