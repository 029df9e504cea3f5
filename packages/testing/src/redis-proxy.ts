import net, { type AddressInfo } from 'node:net'

/** What passed through a proxy, one chunk at a time, in the order it passed. */
export type WireChunk = { to: 'redis' | 'client'; text: string }

export interface RedisProxy {
  /** Redis's URL with the proxy's address in it. */
  url: string
  /** Each chunk that passed either way, in order (empty it to watch afresh). */
  wire: WireChunk[]
  /** Called with each chunk a client sends, before it is passed on. */
  onCommand?: () => void
  /** Holds Redis's answers from now on (a host cut off, its connections still open) … */
  freeze(): void
  /** … and passes them on, those held first. */
  thaw(): void
  /** Ends every connection through the proxy (a host gone). */
  cut(): void
  close(): Promise<void>
}

/**
 * A TCP proxy in front of Redis for tests of what a client does when Redis is slow, cut off or
 * gone, and of what it sends in what order.
 */
export async function redisProxy(target: string): Promise<RedisProxy> {
  const to = new URL(target)
  let frozen = false
  const held: (() => void)[] = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(to.port || 6379), to.hostname)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('error', () => {})
      s.on('close', () => (sockets.delete(s), client.destroy(), upstream.destroy()))
    }
    client.on('data', (d: Buffer) => {
      proxy.wire.push({ to: 'redis', text: d.toString('latin1') })
      proxy.onCommand?.()
      upstream.write(d)
    })
    upstream.on('data', (d: Buffer) => {
      const pass = () => {
        proxy.wire.push({ to: 'client', text: d.toString('latin1') })
        client.write(d)
      }
      if (frozen) held.push(pass)
      else pass()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String((server.address() as AddressInfo).port)
  const proxy: RedisProxy = {
    url: url.toString(),
    wire: [],
    freeze: () => void (frozen = true),
    thaw() {
      frozen = false
      for (const pass of held.splice(0)) pass()
    },
    cut: () => sockets.forEach((s) => s.destroy()),
    async close() {
      proxy.cut()
      await new Promise((r) => server.close(r))
    },
  }
  return proxy
}
