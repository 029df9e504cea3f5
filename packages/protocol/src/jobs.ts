import { z } from 'zod'

/** The queue that carries intern lifecycle work. */
export const INTERN_QUEUE = 'interns'

/** How a kind's failed attempts are retried: its attempts and first backoff, as settings of the worker. */
export interface JobRetry {
  attempts: 'PROVISION_ATTEMPTS' | 'SLACK_ATTEMPTS'
  backoffMs: 'PROVISION_BACKOFF_MS' | 'SLACK_BACKOFF_MS'
}
/** Every lifecycle step talks to the runtime host the same way, so they retry alike (their handlers mark the intern when retries run out). */
const runtimeWork: JobRetry = { attempts: 'PROVISION_ATTEMPTS', backoffMs: 'PROVISION_BACKOFF_MS' }
/** Slack's jobs outlast Slack being away for a while: a reply waits to be posted, in its thread's order. */
const slackWork: JobRetry = { attempts: 'SLACK_ATTEMPTS', backoffMs: 'SLACK_BACKOFF_MS' }

/**
 * Job kinds with their payload schema, job id and retries: the one table the producer (the outbox
 * relay: it validates before adding) and the worker (its registry parses each job's data before the kind's handler sees it) read.
 */
export const Jobs = {
  'intern.provision': {
    retry: runtimeWork,
    schema: z.object({ internId: z.uuid(), generation: z.int().min(1) }),
    /** One job per provisioning run: a run published twice is still one job. */
    jobId: (p: { internId: string; generation: number }) => `intern.provision.${p.internId}.${p.generation}`,
  },
  /** Stops the runtime of a suspended intern (its status is already stopped). */
  'intern.suspend': {
    retry: runtimeWork,
    schema: z.object({ internId: z.uuid(), request: z.uuid() }),
    jobId: (p: { internId: string; request: string }) => `intern.suspend.${p.internId}.${p.request}`,
  },
  /** Tears an intern down: workspace archive, runtime, private vault, then the intern itself. */
  'intern.destroy': {
    retry: runtimeWork,
    schema: z.object({ internId: z.uuid(), request: z.uuid(), skipArchive: z.boolean() }),
    jobId: (p: { internId: string; request: string }) => `intern.destroy.${p.internId}.${p.request}`,
  },
  /** A Slack message to an intern (a mention, a direct message): its turn, answered in its thread. */
  'slack.turn': {
    retry: slackWork,
    schema: z.object({ internId: z.uuid(), eventId: z.string().min(1).max(200) }),
    /** One job per Slack event: a delivery Slack retries is still one turn. */
    jobId: (p: { internId: string; eventId: string }) => `slack.turn.${p.internId}.${p.eventId}`,
  },
  /** A click on a question's card in Slack: its answer given to the paused run, or the clicker refused. */
  'slack.click': {
    retry: slackWork,
    schema: z.object({
      internId: z.uuid(),
      interactionId: z.string().min(1).max(200),
      user: z.string().min(1).max(64),
      /** A button's answer, or a submitted form's ({"action":"accept","content":{…}}). */
      answer: z.string().min(1).max(20_000),
      /** Slack's action_ts (a form's view id): a click Slack delivers twice is one job. */
      actionTs: z.string().min(1).max(64),
    }),
    jobId: (p: { internId: string; interactionId: string; actionTs: string }) =>
      `slack.click.${p.internId}.${p.interactionId}.${p.actionTs}`,
  },
  /**
   * A turn no person typed (a webhook's delivery, a schedule's fire, a catch-up of a missed one):
   * run on the intern's host once it is the intern's next, its outcome kept on its row.
   */
  'intern.turn': {
    retry: runtimeWork,
    /**
     * Behind every job of no priority (BullMQ takes those first): a turn holds its worker while it
     * runs, and a schedule's fire must not wait for a slot behind a thousand turns.
     */
    priority: 10,
    schema: z.object({ turnId: z.uuid() }),
    jobId: (p: { turnId: string }) => `intern.turn.${p.turnId}`,
  },
  /**
   * A schedule's fire: BullMQ's job scheduler `schedule.<id>` adds one per fire time (its job id
   * `repeat:schedule.<id>:<fire time in ms>`); `at` names the fire time of one added otherwise.
   */
  'schedule.fire': {
    retry: runtimeWork,
    schema: z.object({ scheduleId: z.uuid(), at: z.int().min(0).optional() }),
    jobId: (p: { scheduleId: string; at?: number }) => `schedule.fire.${p.scheduleId}.${p.at ?? 'next'}`,
  },
  /** A schedule changed (made, edited, removed): its job scheduler made to match its row. */
  'schedule.sync': {
    retry: runtimeWork,
    schema: z.object({ scheduleId: z.uuid(), version: z.int().min(0) }),
    jobId: (p: { scheduleId: string; version: number }) => `schedule.sync.${p.scheduleId}.${p.version}`,
  },
} as const

export type JobKind = keyof typeof Jobs
export type JobPayload<K extends JobKind> = z.infer<(typeof Jobs)[K]['schema']>

export function isJobKind(kind: string): kind is JobKind {
  return Object.hasOwn(Jobs, kind)
}

/** The queue that carries deliveries to observability destinations (apps/worker/src/destinations.ts). */
export const DESTINATIONS_QUEUE = 'destinations'
