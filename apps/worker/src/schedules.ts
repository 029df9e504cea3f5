import type { Queue } from 'bullmq'
import { Jobs } from '@roster/shared'
import { scheduleTimes } from '@roster/shared/interns'
import {
  admitTurn,
  enabledSchedules,
  existingSchedules,
  claimScheduleFire,
  scheduleToFire,
} from '@roster/shared/repositories'
import type { WorkerDeps } from './context.js'
import type { JobOptionsFor } from './queue.js'

// Schedules as BullMQ runs them. Each enabled schedule has a job scheduler, `schedule.<id>`, which
// adds one job per fire time (its id `repeat:schedule.<id>:<ms>`: one job per fire, whichever
// worker adds it), and every fire is recorded once, as a turn keyed by (schedule, fire time):
// however many workers, however often a job is retried or a missed fire caught up, one turn. The
// rows are the record: a sweep arms a scheduler Redis lacks (Redis lost its data), removes one whose
// schedule is gone, and catches up a fire missed while no scheduler ran (or the intern was
// suspended): run once or skipped, as the schedule says.

/** A schedule's job scheduler id. */
export const schedulerId = (scheduleId: string) => `schedule.${scheduleId}`

/** The fire time of a job its scheduler added (the id ends with it), if it is one. */
export function fireTimeOf(jobId: string | undefined): number | undefined {
  const m = jobId && /^repeat:schedule\.[0-9a-f-]{36}:(\d+)$/.exec(jobId)
  return m ? Number(m[1]) : undefined
}

/** Arms (or re-arms, on a change) a schedule's job scheduler: the next fire from now. */
export async function armSchedule(
  queue: Queue,
  jobOptions: JobOptionsFor,
  s: { id: string; cron: string; timezone: string },
) {
  const { attempts, backoff, removeOnComplete, removeOnFail } = jobOptions('schedule.fire')
  await queue.upsertJobScheduler(
    schedulerId(s.id),
    { pattern: s.cron, tz: s.timezone },
    {
      name: 'schedule.fire',
      data: Jobs['schedule.fire'].schema.parse({ scheduleId: s.id }),
      opts: { attempts, backoff, removeOnComplete, removeOnFail },
    },
  )
}

/** A schedule's scheduler made to match its row: armed while it is enabled, removed otherwise. */
export async function syncSchedule(deps: Pick<WorkerDeps, 'db' | 'queue'>, jobOptions: JobOptionsFor, id: string) {
  const s = await scheduleToFire(deps.db, id)
  if (!s || !s.enabled) {
    await deps.queue.removeJobScheduler(schedulerId(id))
    return s ? 'disarmed' : 'removed'
  }
  await armSchedule(deps.queue, jobOptions, s)
  return 'armed'
}

/** A fire's session: the schedule's named one, or one of its own. */
const sessionOf = (s: { name: string; sessionId: string | null }, at: Date) =>
  s.sessionId ??
  `schedule-${s.name}-${at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}`

/** What the intern is told: which job this is and when it was due, then its prompt. */
const promptOf = (s: { name: string; prompt: string; timezone: string }, at: Date) =>
  `Scheduled job "${s.name}", due ${at.toISOString()} (its schedule reads in ${s.timezone}). No one is typing: do the job; ask only what you cannot decide.\n\n${s.prompt}`

/**
 * The fire `at` of the schedule `id`: its turn recorded and queued, once. Not while the intern is
 * not running (the sweep catches that fire up once it runs again, as the schedule says). A fire
 * begun over SCHEDULE_LATE_MS after its time is a missed one, and stands for every fire missed
 * since: one turn (skipped, if the schedule says so), and the fires up to now marked dealt with.
 * BullMQ adds a fire's job when the one before it begins: one begun after the next fire's time
 * (its workers that far behind) leaves that next fire without a job. So a fire first deals with
 * the one before it, when nothing dealt with that: as a missed fire, as the schedule says.
 */
export async function fireSchedule(deps: WorkerDeps, id: string, at: Date): Promise<string> {
  const s = await scheduleToFire(deps.db, id)
  if (!s) {
    await deps.queue.removeJobScheduler(schedulerId(id))
    return 'schedule gone'
  }
  if (!s.enabled) return 'disabled'
  if (s.lastFireAt && at <= s.lastFireAt) return 'already dealt with'
  if (s.intern.status !== 'running') return `waiting: the intern is ${s.intern.status}`
  const now = new Date()
  const before = latestFire(s, new Date(at.getTime() - 1))
  const dealtWith = Math.max(s.lastFireAt?.getTime() ?? 0, s.updatedAt.getTime())
  if (before && before.getTime() > dealtWith && now.getTime() - at.getTime() <= deps.config.SCHEDULE_LATE_MS)
    await admitFire(deps, s, before, { missed: true, through: before })
  const lateMs = now.getTime() - at.getTime()
  const missed = lateMs > deps.config.SCHEDULE_LATE_MS
  return admitFire(deps, s, at, { missed, through: (missed && latestFire(s, now)) || at })
}

type Firing = NonNullable<Awaited<ReturnType<typeof scheduleToFire>>>

/** One fire's turn: claimed (every fire up to `through` dealt with), then queued, or kept as skipped. */
async function admitFire(
  deps: WorkerDeps,
  s: Firing,
  at: Date,
  { missed, through }: { missed: boolean; through: Date },
) {
  const lateMs = Date.now() - at.getTime()
  const skip =
    missed && s.missed === 'skip'
      ? `missed: due ${at.toISOString()}, and Roster could not fire it until ${Math.round(lateMs / 1000)} s later; the schedule skips missed fires`
      : undefined
  const admitted = await admitTurn(
    deps.db,
    {
      internId: s.internId,
      source: 'schedule',
      scheduleId: s.id,
      scheduledFor: at,
      sessionId: sessionOf(s, at),
      prompt: promptOf(s, at),
      approvalMode: s.approvalMode,
      slackChannel: s.slackChannel,
    },
    deps.config.INTERN_TURN_QUEUE,
    skip,
    (tx) => claimScheduleFire(tx, s.id, at, through),
  )
  if (admitted.kind === 'superseded') return 'already dealt with'
  deps.wakeRelay?.()
  deps.metrics?.scheduleFires.inc({ outcome: admitted.kind })
  if (admitted.kind === 'queued') deps.metrics?.scheduleFireDelay.observe(Math.max(0, lateMs) / 1000)
  return admitted.kind
}

/** The schedule's last fire at or before `at` (undefined: none it can tell). */
function latestFire(s: { cron: string; timezone: string }, at: Date): Date | undefined {
  try {
    return scheduleTimes(s.cron, s.timezone, { seconds: true }).latest(at)
  } catch {
    return undefined // a row this process cannot read (a zone its ICU lacks): left to the scheduler
  }
}

const PAGE = 500

/**
 * One pass over every enabled schedule: a scheduler Redis lacks (or has with another cron or zone)
 * is armed; one whose schedule is gone or disabled is removed; a running intern's fire missed by
 * over SCHEDULE_LATE_MS (no scheduler fired it) is caught up. Idempotent: several workers may sweep.
 */
export async function sweepSchedules(deps: WorkerDeps, jobOptions: JobOptionsFor) {
  const armed = new Map<string, { pattern?: string | null; tz?: string | null }>()
  const total = await deps.queue.getJobSchedulersCount()
  for (let start = 0; start < total; start += PAGE)
    for (const js of await deps.queue.getJobSchedulers(start, start + PAGE - 1, true))
      if (js.key.startsWith('schedule.')) armed.set(js.key, js)
  const wanted = new Set<string>()
  const now = Date.now()
  const outcome = { armed: 0, removed: 0, caughtUp: 0 }
  for (let after: string | undefined; ;) {
    const page = await enabledSchedules(deps.db, after, PAGE)
    for (const s of page) {
      const key = schedulerId(s.id)
      wanted.add(key)
      const has = armed.get(key)
      if (!has || has.pattern !== s.cron || (has.tz ?? 'UTC') !== s.timezone) {
        await armSchedule(deps.queue, jobOptions, s)
        outcome.armed++
      }
      if (s.intern.status !== 'running') continue
      // The last fire due over SCHEDULE_LATE_MS ago, after the one last dealt with (or the schedule's last change).
      const latest = latestFire(s, new Date(now - deps.config.SCHEDULE_LATE_MS))
      const since = Math.max(s.lastFireAt?.getTime() ?? 0, s.updatedAt.getTime())
      if (latest && latest.getTime() > since) {
        await fireSchedule(deps, s.id, latest)
        outcome.caughtUp++
      }
    }
    if (page.length < PAGE) break
    after = page.at(-1)!.id
  }
  // Schedulers of schedules gone or disabled (removed with the intern, or while Redis was away).
  const stray = [...armed.keys()].filter((k) => !wanted.has(k))
  const still = await existingSchedules(
    deps.db,
    stray.map((k) => k.slice('schedule.'.length)),
  )
  for (const key of stray) {
    const id = key.slice('schedule.'.length)
    // Disabled ones are removed too; a schedule made since this pass began is left to its own sync.
    const row = still.has(id) ? await scheduleToFire(deps.db, id) : undefined
    if (row && row.enabled) continue
    await deps.queue.removeJobScheduler(key)
    outcome.removed++
  }
  return outcome
}
