import { execFileSync } from 'node:child_process'
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
    expect(nodeFlags({ ROSTER_NODE_FLAGS: ' --max-old-space-size=512  --trace-gc ' }, 8)).toEqual(['--max-old-space-size=512', '--trace-gc'])
  })

  it('gives flags this Node accepts (an unknown one would stop every process at start)', () => {
    for (const cores of [1, 8]) {
      const out = execFileSync(process.execPath, [...nodeFlags({}, cores), '-e', 'process.stdout.write("ok")'], { encoding: 'utf8' })
      expect(out).toBe('ok')
    }
  })
})
