// Observability destinations (`npm run bench -- destinations`): generations delivered per second to
// a local webhook receiver. BENCH_DESTINATION_GENERATIONS (50,000) records are appended to the
// ledger's Redis stream (as API processes append them); the worker drains them into Postgres, queues
// the deliveries before it acknowledges each batch, and sends them; the rate is from the first
// append to the last generation the receiver got.
import { createServer } from 'node:http'
import Redis from 'ioredis'
import { record } from './generations.mjs'

export async function benchDestinations({ managementKey, base, queuePrefix }) {
  const n = Number(process.env.BENCH_DESTINATION_GENERATIONS ?? 50_000)
  const got = new Set()
  let posts = 0
  const receiver = createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      posts++
      for (const g of JSON.parse(Buffer.concat(chunks).toString()).generations) got.add(g.id)
      res.writeHead(200).end()
    })
  })
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${receiver.address().port}/hook`
  const me = await (await fetch(`${base}/key`, { headers: { authorization: `Bearer ${managementKey}` } })).json()
  const made = await fetch(`${base}/observability/destinations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', type: 'webhook', config: { url } }),
  })
  if (made.status !== 201) throw new Error(`destination: ${made.status} ${await made.text()}`)
  // The fanout reads an account's destinations at most every 2 s.
  await new Promise((r) => setTimeout(r, 2_500))
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
  const stream = `${queuePrefix}:generations`
  const t0 = performance.now()
  for (let i = 0; i < n; i += 1_000) {
    const p = redis.pipeline()
    for (let j = i; j < Math.min(n, i + 1_000); j++)
      p.xadd(
        stream,
        '*',
        'g',
        JSON.stringify(record(j, me.data.organization_id, { prefix: 'resp_dest', workspaceId: me.data.workspace_id })),
      )
    await p.exec()
  }
  while (got.size < n) {
    if (performance.now() - t0 > 600_000) throw new Error(`only ${got.size} of ${n} delivered in 10 minutes`)
    await new Promise((r) => setTimeout(r, 50))
  }
  const s = (performance.now() - t0) / 1000
  redis.disconnect()
  receiver.close()
  return [
    {
      scenario: `destinations: ${n.toLocaleString('en-US')} generations appended, drained and delivered to a webhook`,
      metric: 'generations/s (deliveries)',
      value: `${Math.round(n / s).toLocaleString('en-US')} (${posts.toLocaleString('en-US')})`,
      target: '',
    },
  ]
}
