import { afterAll, beforeAll, vi } from 'vitest'

// Runs around every test file (vitest.config.ts's setupFiles). A worker runs its files one after
// another in one process (isolate: false), so a file that leaves fake timers on or changes the
// environment would change the files after it: it fails here instead, naming what it left.
let envAtStart: Record<string, string | undefined> = {}

beforeAll(() => {
  envAtStart = { ...process.env }
})

afterAll(() => {
  const left: string[] = []
  if (vi.isFakeTimers()) {
    left.push('fake timers on (call vi.useRealTimers())')
    vi.useRealTimers()
  }
  const names = new Set([...Object.keys(envAtStart), ...Object.keys(process.env)])
  for (const name of names) {
    if (process.env[name] === envAtStart[name]) continue
    left.push(`process.env.${name} changed (put it back)`)
    if (envAtStart[name] === undefined) delete process.env[name]
    else process.env[name] = envAtStart[name]
  }
  if (left.length) throw new Error(`this test file left process-wide state behind: ${left.join('; ')}`)
})
