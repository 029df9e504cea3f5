// The least a Node gateway can add: node:http in, undici keep-alive out, bytes passed through
// untouched (no auth, no validation, no translation). The gateway benchmark runs it as `floor`.
// A streamed reply is passed on chunk by chunk as it arrives, so it is a floor for the first byte too.
import { createServer } from 'node:http'
import { Pool } from 'undici'

const upstream = new Pool(process.env.UPSTREAM, { connections: 256 })
createServer(async (req, res) => {
  const chunks = []
  for await (const c of req) chunks.push(c)
  const up = await upstream.request({
    method: 'POST',
    path: req.url,
    headers: { 'content-type': 'application/json' },
    body: Buffer.concat(chunks),
  })
  const type = String(up.headers['content-type'] ?? 'application/json')
  if (type.startsWith('text/event-stream')) {
    res.writeHead(up.statusCode, { 'content-type': type, 'cache-control': 'no-cache' })
    for await (const chunk of up.body) res.write(chunk)
    res.end()
    return
  }
  const body = Buffer.from(await up.body.arrayBuffer())
  res.writeHead(up.statusCode, { 'content-type': 'application/json', 'content-length': body.length })
  res.end(body)
}).listen(Number(process.env.PORT), '127.0.0.1')
