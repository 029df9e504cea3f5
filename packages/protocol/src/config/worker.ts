import { z } from 'zod'
import { port, ms, masterKey, shared, fleetSettings, backgroundTurnSettings } from './values.js'
import { listenerSettings } from '../listener-settings.js'

// The worker process's settings (apps/worker).

export const WorkerConfig = z.object({
  ...shared,
  ...listenerSettings,
  ...fleetSettings,
  ...backgroundTurnSettings,
  SCHEDULE_LATE_MS: ms
    .default(300_000)
    .describe(
      "A schedule's fire not begun this long after its time (Roster was down, the intern suspended) is missed: it runs once or is skipped, as the schedule's `missed` says.",
    ),
  SCHEDULE_SWEEP_MS: ms
    .default(30_000)
    .describe(
      'How often a worker checks every enabled schedule against Redis (a job scheduler missing, as after Redis lost its data, is armed again) and looks for missed fires.',
    ),
  VAULT_MASTER_KEY: masterKey.describe(
    "The same key as the API's: the worker creates and removes interns' private vaults.",
  ),
  DESTINATION_PRIVATE_NETWORKS: z
    .enum(['refuse', 'allow'])
    .default('refuse')
    .describe(
      'Observability destinations (webhooks, OTLP collectors) on private, loopback and link-local addresses are refused unless `allow`.',
    ),
  DESTINATION_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(30)
    .default(10)
    .describe("Tries of one delivery to an observability destination before it counts as the destination's failure."),
  DESTINATION_BACKOFF_MS: ms
    .default(1_000)
    .describe('Wait before the second try of a delivery; each later try waits twice as long as the one before.'),
  DESTINATION_TIMEOUT_MS: ms.default(10_000).describe("How long a destination's answer to one delivery is awaited."),
  DESTINATION_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(256)
    .default(16)
    .describe('Deliveries one worker sends at once.'),
  HOST: z.string().min(1).default('127.0.0.1').describe("Where the worker's health and operator listeners bind."),
  HEALTH_PORT: port.default(0).describe("Port of the worker's `/health` and `/ready`; 0: none."),
  INTERNS_DOMAIN: z
    .string()
    .regex(/^(?!-)[a-z0-9-]+(\.[a-z0-9-]+)*$/, 'must be a lowercase DNS name such as interns.localhost')
    .default('interns.localhost')
    .describe('The DNS zone under which interns get their hostnames.'),
  WORKER_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(50)
    .describe('Jobs one worker process runs at once.'),
  PROVISION_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(50)
    .default(5)
    .describe('Attempts of a lifecycle job (provision, suspend, destroy) before its intern is marked failed.'),
  PROVISION_BACKOFF_MS: ms.default(1_000).describe('The first wait between attempts (it doubles each time).'),
  SLACK_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(50)
    .default(14)
    .describe(
      "Attempts of a Slack job (a turn's reply, a click) before it gives up: with the doubling backoff, 14 wait out about two hours of Slack being away (the turn runs meanwhile; its reply is posted when Slack is back).",
    ),
  SLACK_BACKOFF_MS: ms.default(1_000).describe("The first wait between a Slack job's attempts (it doubles each time)."),
  SLACK_FILE_MAX_MB: z.coerce
    .number()
    .int()
    .min(1)
    .max(16)
    .default(10)
    .describe(
      'Largest file shared with a Slack message that is fetched into the intern’s workspace, in MiB (a larger one is named to the intern, not fetched).',
    ),
  HEALTH_TIMEOUT_MS: ms.default(10_000).describe('How long a started intern may take to answer healthy, per attempt.'),
  JOB_LOCK_MS: ms
    .default(30_000)
    .describe(
      'Lock on a running job: a worker that dies loses its jobs to others after this long (a job taken back from a worker alive but stalled waits for it, up to twice this).',
    ),
  OPERATOR_PORT: port
    .default(0)
    .describe('The operator surface (the queue dashboard, bull-board, at `/queues`) on its own port; 0: none.'),
  OPERATOR_TOKEN: z
    .string()
    .min(32, 'must be at least 32 characters')
    .optional()
    .describe(
      'Its credential (HTTP Basic password, or bearer), at least 32 characters; required with `OPERATOR_PORT`.',
    ),
  RELAY_POLL_MS: ms
    .default(1_000)
    .describe("The outbox relay's safety-net poll (it is normally woken by the database's notification)."),
  GENERATION_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .max(36_500)
    .default(90)
    .describe(
      "How long the generations' records are kept (`GET /generation`, `GET /generations`, the content's request ids): the worker drops each day's partition once all of it is older. Analytics, the spend counted against limits and budgets, and the credits stay whole (they are kept apart, by hour and day).",
    ),
  GENERATION_CONTENT_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3650)
    .default(30)
    .describe(
      "How long the request and response bodies a workspace keeps (private logging) are kept before the worker removes them; the generations' records and spend stay.",
    ),
  AUDIT_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .max(36_500)
    .default(400)
    .describe(
      'How long the audit log keeps each governance change (docs/audit.md) before the worker deletes it; nothing else ever removes or changes one.',
    ),
  RECONCILE_INTERVAL_MS: ms
    .default(5_000)
    .describe('How often the reconciler looks for stuck interns (a queued job that vanished, a host that died).'),
  STUCK_AFTER_MS: ms
    .default(15_000)
    .describe('An intern in a transitional status with no progress for this long is repaired by the reconciler.'),
  IDEMPOTENCY_TTL_HOURS: z.coerce
    .number()
    .positive()
    .default(24)
    .describe('How long an `Idempotency-Key` is remembered (swept every minute); a retry after that creates anew.'),
})
export type WorkerConfig = z.infer<typeof WorkerConfig>
