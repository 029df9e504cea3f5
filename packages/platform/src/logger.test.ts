import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { loggerOptions, requestLogger } from './logger.js'

/** A logger at `level` whose lines are collected, parsed. */
function capture(level: string) {
  const lines: Record<string, unknown>[] = []
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)))
      done()
    },
  })
  return { logger: pino(loggerOptions('test', level), sink), lines }
}

describe('a request’s logger', () => {
  it('writes nothing and makes no child below its level', () => {
    const { logger, lines } = capture('warn')
    let children = 0
    const child = logger.child.bind(logger)
    logger.child = ((...args: Parameters<typeof child>) => (children++, child(...args))) as typeof logger.child
    const log = requestLogger(logger, { reqId: 'r1' }, {})
    log.info('routine')
    log.debug({ a: 1 }, 'detail')
    expect(lines).toEqual([])
    expect(children).toBe(0)
    expect(log.level).toBe('warn')
  })

  it('writes with its request id, redacted, once a line is at its level', () => {
    const { logger, lines } = capture('info')
    const log = requestLogger(logger, { reqId: 'r2' }, {})
    log.info({ headers: { authorization: 'Bearer sk-secret' } }, 'incoming')
    log.error(new Error('boom'))
    log.child({ part: 'x' }).warn('from a child')
    log.trace('below the level')
    log.fatal('last')
    expect(lines.map((l) => [l.reqId, l.msg, l.level])).toEqual([
      ['r2', 'incoming', 30],
      ['r2', 'boom', 50],
      ['r2', 'from a child', 40],
      ['r2', 'last', 60],
    ])
    expect((lines[0]!.headers as Record<string, string>).authorization).toBe('[redacted]')
    expect(lines[2]!.part).toBe('x')
  })

  it('takes a level of its own, as a route with its own log level asks', () => {
    const { logger, lines } = capture('warn')
    const log = requestLogger(logger, { reqId: 'r3' }, { level: 'debug' })
    log.debug('shown')
    expect(lines.map((l) => l.msg)).toEqual(['shown'])
    const lazy = requestLogger(logger, { reqId: 'r4' }, {})
    lazy.level = 'info'
    lazy.info('now shown')
    expect(logger.level).toBe('warn')
    expect(lines.map((l) => [l.reqId, l.msg])).toEqual([
      ['r3', 'shown'],
      ['r4', 'now shown'],
    ])
  })
})
