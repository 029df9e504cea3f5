import { z } from 'zod'

/** The queue that carries intern lifecycle work. */
export const INTERN_QUEUE = 'interns'

/**
 * Job kinds with their payload schema. The producer (the outbox relay) validates before adding;
 * handlers parse again at the top.
 */
export const Jobs = {
  'intern.provision': {
    schema: z.object({ internId: z.uuid(), generation: z.int().min(1) }),
    /** One job per provisioning run: a run published twice is still one job. */
    jobId: (p: { internId: string; generation: number }) => `intern.provision.${p.internId}.${p.generation}`,
  },
  /** Stops the runtime of a suspended intern (its status is already stopped). */
  'intern.suspend': {
    schema: z.object({ internId: z.uuid(), request: z.uuid() }),
    jobId: (p: { internId: string; request: string }) => `intern.suspend.${p.internId}.${p.request}`,
  },
  /** Tears an intern down: workspace archive, runtime, private vault, then the intern itself. */
  'intern.destroy': {
    schema: z.object({ internId: z.uuid(), request: z.uuid(), skipArchive: z.boolean() }),
    jobId: (p: { internId: string; request: string }) => `intern.destroy.${p.internId}.${p.request}`,
  },
} as const

export type JobKind = keyof typeof Jobs
export type JobPayload<K extends JobKind> = z.infer<(typeof Jobs)[K]['schema']>

export function isJobKind(kind: string): kind is JobKind {
  return Object.hasOwn(Jobs, kind)
}
