import { isJobKind, Jobs, type JobKind, type JobPayload } from '@roster/shared'
import type { JobContext, WorkerDeps } from './context.js'
import * as internProvision from './jobs/intern-provision.js'
import * as internSuspend from './jobs/intern-suspend.js'
import * as internDestroy from './jobs/intern-destroy.js'
import * as slackTurn from './jobs/slack-turn.js'
import * as slackClick from './jobs/slack-click.js'
import * as internTurn from './jobs/intern-turn.js'
import * as scheduleFire from './jobs/schedule-fire.js'
import * as scheduleSync from './jobs/schedule-sync.js'

type Handlers = { [K in JobKind]: (deps: WorkerDeps, payload: JobPayload<K>, ctx: JobContext) => Promise<unknown> }
type Run = (deps: WorkerDeps, data: unknown, ctx: JobContext) => Promise<unknown>

const handlers: Handlers = {
  'intern.provision': internProvision.handle,
  'intern.suspend': internSuspend.handle,
  'intern.destroy': internDestroy.handle,
  'slack.turn': slackTurn.handle,
  'slack.click': slackClick.handle,
  'intern.turn': internTurn.handle,
  'schedule.fire': scheduleFire.handle,
  'schedule.sync': scheduleSync.handle,
}

/** A kind's handler, given the job's data once it has passed the kind's schema (a job from an older or foreign producer fails here, not midway). */
function runner<K extends JobKind>(kind: K): Run {
  const handler: Handlers[K] = handlers[kind]
  return (deps, data, ctx) => handler(deps, Jobs[kind].schema.parse(data) as JobPayload<K>, ctx)
}

/** Fails at boot when a job kind has no handler, rather than when its first job arrives. */
export function handlerFor(kind: string): Run {
  if (!isJobKind(kind) || !Object.hasOwn(handlers, kind)) throw new Error(`no handler for job kind ${kind}`)
  return runner(kind)
}

export function assertRegistryComplete() {
  for (const kind of Object.keys(Jobs)) handlerFor(kind)
}
