import type { ErrorType } from '@roster/protocol'
import type { Usage } from './deltas.js'

/** What the engine reports as it works, for metrics and traces. Models and providers are the catalogue's. */
export interface GatewayObserver {
  /** One upstream call begins; what it returns is called once when the call ends. */
  upstream(call: UpstreamCall): (end: UpstreamCallEnd) => void
  /** One request ended (`outcome`: ok, cancelled, or the canonical error type). */
  request(report: {
    model: string
    provider: string
    door: string
    outcome: string
    fallbacks: number
    usage: Usage
    cost: number
  }): void
}

/** An upstream call as it starts: where it goes and what was asked of the model. */
export interface UpstreamCall {
  provider: string
  protocol: string
  /** The catalogue's model id, and the provider's own name for it. */
  model: string
  upstreamModel: string
  baseUrl: string
  stream: boolean
  maxTokens?: number
  temperature?: number
  topP?: number
}

/** How it ended: the provider's first byte (when one came) and the whole call, in ms. */
export interface UpstreamCallEnd {
  firstByteMs?: number
  totalMs: number
  ok: boolean
  /** The turn's usage and why the model stopped (a call that succeeded). */
  usage?: Usage
  finish?: string
  /** The canonical error type (a call that failed). */
  errorType?: ErrorType
}

/** Several observers as one (metrics and traces), or none. */
export function observers(...list: (GatewayObserver | undefined)[]): GatewayObserver | undefined {
  const all = list.filter((o): o is GatewayObserver => o !== undefined)
  if (all.length <= 1) return all[0]
  return {
    upstream(call) {
      const ends = all.map((o) => o.upstream(call))
      return (end) => {
        for (const e of ends) e(end)
      }
    },
    request(report) {
      for (const o of all) o.request(report)
    },
  }
}
