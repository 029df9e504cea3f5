// The floor again, through Fastify: parse the JSON body, send it on with undici, answer the parsed
// reply, or pass a streamed one through as it comes. No auth, validation or translation. The
// gateway benchmarks run it as `fastify`, to tell Fastify's share of Roster's per-request cost from
// Roster's own.
import Fastify from 'fastify'
import { Pool } from 'undici'

const upstream = new Pool(process.env.UPSTREAM, { connections: 256 })
const app = Fastify({ logger: false })
// Any endpoint of the simulator's: /v1/responses beside Roster's /responses, /v1/chat/completions
// beside its doors.
app.post('/v1/*', async (req, reply) => {
  const up = await upstream.request({
    method: 'POST',
    path: req.url,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(req.body),
  })
  if (req.body?.stream !== true) return await up.body.json()
  // Server-sent events, chunk by chunk as the upstream sends them.
  reply.header('content-type', 'text/event-stream').header('cache-control', 'no-cache')
  return reply.send(up.body)
})
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
// An orderly exit on SIGTERM, so a profile asked for with BENCH_FASTIFY_FLAGS gets written.
process.on('SIGTERM', () => process.exit(0))
