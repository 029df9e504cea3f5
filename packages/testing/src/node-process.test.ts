import { describe, expect, it } from 'vitest'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NodeProcess, freePort } from './node-process.js'

// How a stack's process that does not come up is reported: at once, with what it printed.
const script = (text: string) => {
  const file = join(mkdtempSync(join(tmpdir(), 'roster-process-')), 'main.mjs')
  writeFileSync(file, text)
  return file
}

describe('waiting for a process to print', () => {
  it('fails at once when the process exits first, with the end of what it printed', async () => {
    // A server whose port is taken, as when another process took a port between freePort and the bind.
    const port = await freePort()
    const holder = createServer()
    await new Promise<void>((r) => holder.listen(port, '127.0.0.1', r))
    try {
      const p = new NodeProcess(
        'server',
        script(
          `import { createServer } from 'node:net'\ncreateServer().listen(${port}, '127.0.0.1', () => console.log('listening'))`,
        ),
        {},
      ).start()
      const started = Date.now()
      const failure = await p.waitForOutput(/listening/).catch((err: Error) => err)
      expect(failure).toBeInstanceOf(Error)
      expect((failure as Error).message).toMatch(
        /server exited \(1\) before printing \/listening\/; it printed:\n[\s\S]*EADDRINUSE/,
      )
      expect(Date.now() - started).toBeLessThan(5_000)
    } finally {
      holder.close()
    }
  })

  it('says what the process printed when it times out', async () => {
    const p = new NodeProcess(
      'quiet',
      script(`console.log('starting, slowly'); setTimeout(() => {}, 10_000)`),
      {},
    ).start()
    await expect(p.waitForOutput(/listening/, 500)).rejects.toThrow(
      /timed out after 500 ms waiting for quiet to print \/listening\/; it printed:\nstarting, slowly/,
    )
    await p.kill()
  })
})

describe('freePort', () => {
  it('never hands out the same port twice in one process, though the kernel may offer it again', async () => {
    const ports: number[] = []
    for (let i = 0; i < 200; i++) ports.push(await freePort())
    expect(new Set(ports).size).toBe(ports.length)
    // Each was free when handed out: it can be bound now (none of them is held).
    const server = createServer()
    await new Promise<void>((r) => server.listen(ports.at(-1), '127.0.0.1', r))
    server.close()
  })
})
