import type { InternStatus } from '@roster/protocol'

// An intern's statuses: which may follow which (the transitions table), and the groups of them the
// code asks about, each named once here. A new status is placed in the table and its groups in this
// file; the statements use the groups (`status = ANY(...)`), and the compiler finds every table a
// status is missing from (each is a Record over InternStatus or a typed list of them).

/** Which statuses may follow each (intern-state.ts applies them, guarded). */
export const Transitions: Record<InternStatus, readonly InternStatus[]> = {
  // Created with provision:false, or suspended: waits for a provision call.
  stopped: ['queued', 'destroying'],
  queued: ['provisioning', 'failed', 'stopped', 'destroying'],
  // provisioning → provisioning records the next step's progress; → queued starts it over elsewhere
  // (its runtime host died or drained mid-run).
  provisioning: ['provisioning', 'queued', 'running', 'failed', 'stopped', 'destroying'],
  running: ['queued', 'stopped', 'failed', 'destroying'],
  failed: ['queued', 'stopped', 'destroying'],
  destroying: ['destroy_failed'],
  destroy_failed: ['destroying'],
  awaiting_slack_install: ['queued', 'stopped', 'destroying'],
}

/** The groups of statuses the code asks about. */
export const StatusGroups = {
  /** On a runtime host and holding its room there: being provisioned, running, being torn down. */
  heldByHost: ['provisioning', 'running', 'destroying'],
  /** Placed on a host or on its way to one: a chat that finds it moving waits for it. */
  placedOrPlacing: ['queued', 'provisioning', 'running'],
  /** A provisioning run is under way (a job queued, or a step running). */
  provisioningRun: ['queued', 'provisioning'],
  /** On a host that answers for it: when that host dies or drains, it is placed again elsewhere. */
  onHost: ['provisioning', 'running'],
  /** Being deleted (or its deletion failed): nothing but the deletion may touch it. */
  deleting: ['destroying', 'destroy_failed'],
  /** At rest after a run: waits for a provision call (a failed one keeps its failure). */
  atRest: ['stopped', 'failed'],
} as const satisfies Record<string, readonly InternStatus[]>

export type StatusGroup = keyof typeof StatusGroups

/** Whether `status` is in `group`. */
export const inGroup = (group: StatusGroup, status: string): boolean =>
  (StatusGroups[group] as readonly string[]).includes(status)

/** A group as a statement's parameter (`status = ANY(${statuses('deleting')}::intern_status[])`). */
export const statuses = (group: StatusGroup): InternStatus[] => [...StatusGroups[group]]
