import { CronExpressionParser } from 'cron-parser'
import { AppError } from '@roster/protocol'

// A schedule's times: its cron expression read in its time zone (daylight saving included), by
// cron-parser, the library BullMQ's job schedulers fire by, so what Roster says the next fire is
// and when BullMQ fires agree. Minutes are the finest grain: a six-field expression (seconds) is
// refused, as a schedule is a standing job, not a loop (unless the operator allows seconds:
// SCHEDULE_SECONDS, for tests and demonstrations).

const MACROS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'])

export interface ScheduleTimes {
  /** The first fire strictly after `after`. */
  next(after: Date): Date
  /** The last fire at or before `at`, if there is one (within the parser's reach). */
  latest(at: Date): Date | undefined
}

/** Whether `tz` is a time zone this process knows (IANA names, UTC). */
export function knownTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    return true
  } catch {
    return false
  }
}

/** The times of `cron` in `tz`; refuses (invalid_body, saying why) an expression or zone it cannot read. */
export function scheduleTimes(cron: string, tz: string, opts: { seconds?: boolean } = {}): ScheduleTimes {
  const expression = cron.trim().replace(/\s+/g, ' ')
  if (!knownTimeZone(tz)) throw new AppError('invalid_body', `invalid request: timezone ${tz} is not a known time zone`)
  const fields = expression.split(' ').length
  if (
    expression.startsWith('@') ? !MACROS.has(expression.toLowerCase()) : fields !== 5 && !(opts.seconds && fields === 6)
  )
    throw new AppError(
      'invalid_body',
      `invalid request: cron must have five fields (minute hour day-of-month month day-of-week) or be one of ${[...MACROS].join(', ')}`,
    )
  const parse = (currentDate: Date) => {
    try {
      return CronExpressionParser.parse(expression, { tz, currentDate, strict: false })
    } catch (err) {
      throw new AppError('invalid_body', `invalid request: cron ${cron}: ${(err as Error).message}`)
    }
  }
  const times: ScheduleTimes = {
    next: (after) => parse(after).next().toDate(),
    latest(at) {
      try {
        // prev() is strictly before its start: one millisecond on, a fire at `at` itself counts.
        return parse(new Date(at.getTime() + 1))
          .prev()
          .toDate()
      } catch {
        return undefined
      }
    },
  }
  // An expression that never fires (the 30th of February) is refused when it is made, not found out later.
  try {
    times.next(new Date())
  } catch (err) {
    throw err instanceof AppError
      ? err
      : new AppError('invalid_body', `invalid request: cron ${cron} never fires (${(err as Error).message})`)
  }
  return times
}
