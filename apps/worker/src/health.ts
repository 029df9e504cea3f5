import { createServer, type Server } from 'node:http'
import { httpServerOptions, limitHttpServer, type ListenerSettings } from '@roster/shared'

/**
 * The worker's /health (process up) and /ready (Postgres and Redis answer), for orchestrators.
 * Plain node:http: two routes do not need a framework in the worker.
 */
export async function startHealthServer(
  port: number,
  host: string,
  limits: ListenerSettings,
  checks: Record<string, () => Promise<unknown>>,
): Promise<Server> {
  const server = createServer(httpServerOptions(limits), async (req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    if (req.url === '/health') return send(200, { status: 'ok' })
    if (req.url !== '/ready') return send(404, { error: 'not found' })
    const results = Object.fromEntries(
      await Promise.all(
        Object.entries(checks).map(async ([name, check]) => [
          name,
          await check().then(
            () => 'ok',
            () => 'unavailable',
          ),
        ]),
      ),
    )
    const ready = Object.values(results).every((r) => r === 'ok')
    send(ready ? 200 : 503, { status: ready ? 'ready' : 'unavailable', ...results })
  })
  limitHttpServer(server, limits)
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  return server
}
