import { createServer } from 'node:http'

/**
 * A service on the loopback that answers after `?ms=` milliseconds and counts each `?mark=` it is
 * sent: a tool call that takes a while, and the proof a step ran once. A caller that leaves ends
 * its wait.
 */
export async function startSlowService(): Promise<{ port: number; hits: Map<string, number>; close(): void }> {
  const hits = new Map<string, number>()
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const mark = url.searchParams.get('mark') ?? ''
    hits.set(mark, (hits.get(mark) ?? 0) + 1)
    const timer = setTimeout(
      () => res.writeHead(200, { 'content-type': 'text/plain' }).end(`slept ${mark}`),
      Number(url.searchParams.get('ms') ?? 0),
    )
    res.on('close', () => clearTimeout(timer))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { port: (server.address() as { port: number }).port, hits, close: () => server.close() }
}
