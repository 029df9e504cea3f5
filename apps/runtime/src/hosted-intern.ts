import { hostError, type HostErrorBody, type InternSpec } from '@roster/protocol'
import type { InternDaemon } from './agent/daemon.js'

// An intern as one runtime host holds it, and the refusals the host's routes answer with.

export interface HostedIntern {
  id: string
  spec: InternSpec
  digest: string
  running: boolean
  startedAt: string | null
  /** Work counters: how often the configuration was really written and the intern really started. */
  configWrites: number
  starts: number
  /** When it was configured (a heartbeat's answer older than that may not know of it yet). */
  configuredAt: number
  /** Stopped because this host lost touch with the fleet's record: resumed when it is confirmed. */
  heldByLease: boolean
  /** Its daemon's runs and sessions: made at its first chat, ended when it stops. */
  daemon?: InternDaemon
  /** The workspace's fingerprint at its last snapshot (or restore). */
  snapshotOf?: string
  /** Snapshots one at a time. */
  snapshotting?: Promise<void>
}

/** A refusal the routes answer with (the protocol's host error codes). */
export class Refused extends Error {
  constructor(
    readonly status: number,
    readonly body: HostErrorBody,
  ) {
    super(body.message)
  }
}
export const refused = (...args: Parameters<typeof hostError>) => {
  const { status, body } = hostError(...args)
  return new Refused(status, body)
}
