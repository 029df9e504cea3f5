import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { nodeFlags } from './node-flags.mjs'

describe('nodeFlags', () => {
  it('turns off allocation-site pretenuring everywhere and adds the single-threaded collector on two cores or fewer', () => {
    expect(nodeFlags({}, 2)).toEqual(['--single-threaded-gc', '--no-allocation-site-pretenuring'])
    expect(nodeFlags({}, 1)).toEqual(['--single-threaded-gc', '--no-allocation-site-pretenuring'])
    expect(nodeFlags({}, 8)).toEqual(['--no-allocation-site-pretenuring'])
  })

  it('lets ROSTER_NODE_FLAGS replace the choice, empty meaning none', () => {
    expect(nodeFlags({ ROSTER_NODE_FLAGS: '' }, 2)).toEqual([])
    expect(nodeFlags({ ROSTER_NODE_FLAGS: ' --max-old-space-size=512  --trace-gc ' }, 8)).toEqual([
      '--max-old-space-size=512',
      '--trace-gc',
    ])
  })

  it('gives flags this Node accepts (an unknown one would stop every process at start)', () => {
    for (const cores of [1, 8]) {
      const out = execFileSync(process.execPath, [...nodeFlags({}, cores), '-e', 'process.stdout.write("ok")'], {
        encoding: 'utf8',
      })
      expect(out).toBe('ok')
    }
  })

  it('is what the image and the compose file start Roster’s processes with (they cannot call it)', () => {
    // The flags every machine gets; the single-threaded collector depends on the host's cores.
    const always = nodeFlags({}, 64)
    const commands = ['Dockerfile', 'docker-compose.yml']
      .flatMap((file) => [
        ...readFileSync(new URL(`../${file}`, import.meta.url), 'utf8').matchAll(
          /\["node",[^\]]*"apps\/[^"]+\/dist\/main\.js"\]/g,
        ),
      ])
      .map((m) => JSON.parse(m[0]) as string[])
    expect(commands.length).toBe(4) // the image's API, and compose's runtime, API and worker
    for (const command of commands) expect(command.slice(1, -1)).toEqual(always)
  })
})
