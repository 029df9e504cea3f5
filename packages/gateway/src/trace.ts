import { createHash, randomBytes } from 'node:crypto'
import type { ResponsesRequest } from './request.js'

// `trace`: the five known keys name the request's trace and span; other keys are attributes.
// Each upstream call is a generation span: its record goes to the trace logger, and the provider
// gets a W3C `traceparent` so its own tracing joins the same trace.

export interface TraceLogger {
  info(record: object, message: string): void
}

const KNOWN = ['trace_id', 'trace_name', 'span_name', 'generation_name', 'parent_span_id'] as const

/** A W3C trace id: the caller's when it is one, else a stable digest of whatever they gave. */
const w3cTraceId = (id: string) =>
  /^[0-9a-f]{32}$/.test(id) ? id : createHash('sha256').update(id).digest('hex').slice(0, 32)

export function traceOf(req: ResponsesRequest) {
  const t = req.trace
  if (!t) return undefined
  const known: Record<string, string> = {}
  const attributes: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(t)) {
    if ((KNOWN as readonly string[]).includes(k)) known[k] = String(v)
    else attributes[k] = v
  }
  const traceId = w3cTraceId(known.trace_id ?? randomBytes(16).toString('hex'))
  const spanId = randomBytes(8).toString('hex')
  return {
    headers: { traceparent: `00-${traceId}-${spanId}-01` },
    log(logger: TraceLogger, fields: object) {
      logger.info({ trace: { ...known, w3c_trace_id: traceId, span_id: spanId }, attributes, ...fields }, 'generation')
    },
  }
}
