import { describe, expect, it } from 'vitest'
import { EventEmitter } from 'node:events'
import { reportConnectionErrors } from './connection-errors.js'

describe('reporting a connection’s errors', () => {
  it('logs the first error at once, then one line per interval with the count, and the recovery', () => {
    const lines: { level: string; msg: string; data?: unknown }[] = []
    const log = {
      warn: (data: unknown, msg: string) => lines.push({ level: 'warn', msg, data }),
      info: (msg: string) => lines.push({ level: 'info', msg }),
    }
    const conn = new EventEmitter()
    let now = 1_000_000
    const realNow = Date.now
    Date.now = () => now
    try {
      reportConnectionErrors(conn as never, log as never, 'queue: redis', 30_000)
      for (let i = 0; i < 10; i++)
        conn.emit('error', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))
      expect(lines).toHaveLength(1)
      now += 31_000
      conn.emit('error', new Error('connect ECONNREFUSED'))
      expect(lines).toHaveLength(2)
      expect(lines[1]).toMatchObject({
        level: 'warn',
        msg: 'queue: redis: connect ECONNREFUSED',
        data: { errorsSinceLastLine: 10 },
      })
      conn.emit('ready')
      conn.emit('ready')
      expect(lines.slice(2)).toEqual([{ level: 'info', msg: 'queue: redis: connected again' }])
    } finally {
      Date.now = realNow
    }
  })
})
