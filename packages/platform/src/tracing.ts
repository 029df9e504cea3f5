import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api'

/**
 * OpenTelemetry traces, on only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
 * Everything here checks `tracing.on` first, so with tracing off the hot paths allocate nothing
 * for it and the SDK is never even loaded (it is imported on start).
 *
 * Spans are made by hand at Roster's own seams (HTTP routes, the outbox row, the job, its steps,
 * the runtime calls, upstream model calls) rather than by auto-instrumentation, which would wrap
 * every module at load and cost the hot paths even when no one reads the traces.
 */
export const tracing = { on: false }

/** W3C trace context (traceparent, tracestate) as it travels in headers, outbox rows and jobs. */
export type TraceCarrier = Record<string, string>

const tracer = () => trace.getTracer('roster')

/**
 * Starts the SDK (OTLP/HTTP exporter, W3C propagation) when an endpoint is configured (the
 * process's validated OTEL_EXPORTER_OTLP_ENDPOINT; the SDK reads it and its other OTEL_* settings
 * from the environment itself).
 */
export async function startTracing(
  service: string,
  endpoint: string | undefined,
): Promise<{ shutdown(): Promise<void> } | undefined> {
  if (!endpoint) return undefined
  const [{ NodeSDK }, { OTLPTraceExporter }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ])
  // OTEL_SERVICE_NAME, when set, names the process instead (the SDK reads it).
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME || `roster-${service}`,
    traceExporter: new OTLPTraceExporter(),
    instrumentations: [],
  })
  sdk.start()
  tracing.on = true
  return {
    async shutdown() {
      tracing.on = false
      await sdk.shutdown()
    },
  }
}

/** The active context as a carrier to store or send, or null with tracing off (or no span active). */
export function activeCarrier(): TraceCarrier | null {
  if (!tracing.on) return null
  const carrier: TraceCarrier = {}
  propagation.inject(context.active(), carrier)
  return carrier.traceparent ? carrier : null
}

/** A span's own context as a carrier: what work it hands on (a job) continues under. */
export function carrierOf(span: Span): TraceCarrier {
  const carrier: TraceCarrier = {}
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier)
  return carrier
}

/** Adds the active context's headers to an outgoing request's headers (nothing with tracing off). */
export function injectTrace(headers: Record<string, string>): Record<string, string> {
  if (tracing.on) propagation.inject(context.active(), headers)
  return headers
}

/** The context a carrier names (the active one when there is none). */
export function contextFrom(carrier: unknown): Context {
  return carrier && typeof carrier === 'object' ? propagation.extract(context.active(), carrier) : context.active()
}

export interface SpanOptions {
  kind?: SpanKind
  attributes?: Attributes
  /** Start under this carrier's context instead of the active one (a row or job from elsewhere). */
  parent?: unknown
}

/**
 * Runs `work` inside a span (ended when it settles, marked as an error when it throws), or runs it
 * plainly with tracing off. The span is handed to `work` for attributes known only later.
 */
export async function inSpan<T>(
  name: string,
  options: SpanOptions,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!tracing.on) return work(undefined)
  const parent = parentOf(options)
  const span = tracer().startSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes },
    parent,
  )
  try {
    return await context.with(trace.setSpan(parent, span), () => work(span))
  } catch (err) {
    failSpan(span, err)
    throw err
  } finally {
    span.end()
  }
}

/** Starts a span the caller ends (for work that ends in a callback); undefined with tracing off. */
export function startSpan(name: string, options: SpanOptions = {}): Span | undefined {
  if (!tracing.on) return undefined
  return tracer().startSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes },
    parentOf(options),
  )
}

/** The context a span starts under: the carrier's, or the active one. */
const parentOf = (options: SpanOptions): Context =>
  options.parent === undefined ? context.active() : contextFrom(options.parent)

export function failSpan(span: Span, err: unknown) {
  span.recordException(err instanceof Error ? err : String(err))
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) })
}

const requestSpans = new WeakMap<object, Span>()

/**
 * A server span per HTTP request (named by method and route template, continuing a caller's
 * traceparent), active while the route's handler runs, so spans the handler starts are its
 * children. Fastify parses the body between the request hook and the handler, outside any async
 * context a hook could set, so the handler itself is wrapped. Register before any route; only with
 * tracing on.
 */
export function traceHttpServer(app: FastifyInstance) {
  app.addHook('onRequest', (req, reply, done) => {
    const route = req.routeOptions.url
    const span = tracer().startSpan(
      route ? `${req.method} ${route}` : req.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': req.method,
          'url.path': req.url.split('?')[0],
          ...(route ? { 'http.route': route } : {}),
        },
      },
      propagation.extract(context.active(), req.headers),
    )
    requestSpans.set(req, span)
    reply.raw.once('close', () => {
      const status = reply.raw.statusCode
      span.setAttribute('http.response.status_code', status)
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
    })
    done()
  })
  app.addHook('onRoute', (route) => {
    const handler = route.handler
    route.handler = function (this: FastifyInstance, req: FastifyRequest, reply: FastifyReply) {
      const span = requestSpans.get(req)
      return span
        ? context.with(trace.setSpan(context.active(), span), () => handler.call(this, req, reply))
        : handler.call(this, req, reply)
    }
  })
}

export { SpanKind, type Span }
