import { Jobs, type JobKind } from '@roster/shared'
import type { JobContext, WorkerDeps } from './context.js'
import * as internProvision from './jobs/intern-provision.js'
import * as internSuspend from './jobs/intern-suspend.js'
import * as internDestroy from './jobs/intern-destroy.js'

type Handler = (deps: WorkerDeps, payload: never, ctx: JobContext) => Promise<unknown>

const handlers: Record<JobKind, Handler> = {
  'intern.provision': internProvision.handle as Handler,
  'intern.suspend': internSuspend.handle as Handler,
  'intern.destroy': internDestroy.handle as Handler,
}

/** Fails at boot when a job kind has no handler, rather than when its first job arrives. */
export function handlerFor(kind: string): Handler {
  const handler = (handlers as Record<string, Handler | undefined>)[kind]
  if (!handler) throw new Error(`no handler for job kind ${kind}`)
  return handler
}

export function assertRegistryComplete() {
  for (const kind of Object.keys(Jobs)) handlerFor(kind)
}
