// The operator's reads (GET /api/v1/operator/fleet): what the admin CLI's `runtime list` shows and
// the console's fleet page reads, in one shape for both sides.

/** A runtime host as an operator reads it: a draining host that has finished is `drained`; only a live one has room. */
export interface HostView {
  id: string
  address: string
  state: 'live' | 'draining' | 'drained' | 'dead'
  interns: number
  capacity: number
  free: number
  last_heartbeat_at: string
}

/** A queue's jobs by state. */
export interface QueueDepth {
  name: string
  jobs: Record<'waiting' | 'prioritized' | 'active' | 'delayed' | 'failed' | 'completed', number>
}

/** An observability destination whose deliveries fail (its configuration is never shown). */
export interface FailingDestination {
  id: string
  account_id: string
  workspace_id: string
  type: string
  name: string | null
  enabled: boolean
  failures: number
  last_error: string | null
  last_delivered_at: string | null
}

export interface FleetView {
  hosts: HostView[]
  /** null while Redis does not answer. */
  queues: QueueDepth[] | null
  dashboard_url: string | null
  failing_destinations: FailingDestination[]
}
