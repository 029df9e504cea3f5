import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:http'
import { gunzipSync } from 'node:zlib'
import * as semconv from '@opentelemetry/semantic-conventions/incubating'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { catalogueFile, freePort, startStack, waitFor, type Stack, useTestTenant } from '@roster/testing'

// Every process exports its spans over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT) to a receiver this
// test runs, which keeps what the exporters post (OTLP's JSON encoding). One create must give one
// trace across the API, the outbox row, the relay, the job, its steps and the runtime host.

interface OtlpSpan {
  service: string
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes: Record<string, unknown>
  status?: { code?: number }
}

const env = useTestTenant()
let sim: Simulator
let stack: Stack
let receiver: Server
const spans: OtlpSpan[] = []
const bodies: string[] = []

function value(v: Record<string, unknown>): unknown {
  if ('stringValue' in v) return v.stringValue
  if ('intValue' in v) return Number(v.intValue)
  if ('doubleValue' in v) return v.doubleValue
  if ('boolValue' in v) return v.boolValue
  if ('arrayValue' in v) return ((v.arrayValue as { values?: Record<string, unknown>[] }).values ?? []).map(value)
  return undefined
}
const attributes = (list: { key: string; value: Record<string, unknown> }[] = []) =>
  Object.fromEntries(list.map((a) => [a.key, value(a.value)]))

beforeAll(async () => {
  const port = await freePort()
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      let raw = Buffer.concat(chunks)
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw)
      const text = raw.toString('utf8')
      bodies.push(text)
      if (req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end()
        return
      }
      const body = JSON.parse(text) as {
        resourceSpans: {
          resource: { attributes: never }
          scopeSpans: { spans: (Omit<OtlpSpan, 'attributes' | 'service'> & { attributes: never })[] }[]
        }[]
      }
      for (const rs of body.resourceSpans) {
        const service = String(attributes(rs.resource.attributes)['service.name'])
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans) spans.push({ ...s, service, attributes: attributes(s.attributes) })
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((r) => receiver.listen(port, '127.0.0.1', r))
  sim = await startSimulator({ replyTokens: 3 })
  stack = await startStack({
    databaseUrl: env.t.url,
    env: {
      MODEL_CATALOGUE: catalogueFile(simulatorCatalogue(sim.url)),
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  })
})
afterAll(async () => {
  await stack?.stop()
  await sim?.close()
  receiver?.close()
})

const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 }

describe('OpenTelemetry traces', () => {
  it('follow one create from the API through the outbox row, the relay, the job and its steps to the runtime host', async () => {
    // The caller's own trace is continued (W3C traceparent).
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
    const headers = { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' }
    const res = await fetch(`${stack.apiUrl}/interns`, {
      method: 'POST',
      headers: { ...headers, traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      body: JSON.stringify({ name: 'traced', provision: true }),
    })
    expect(res.status).toBe(201)
    const { id } = (await res.json()) as { id: string }
    await waitFor(
      async () => (await (await fetch(`${stack.apiUrl}/interns/${id}`, { headers })).json()).status === 'running',
      { timeoutMs: 30_000, what: 'the intern to run' },
    )

    const inTrace = () => spans.filter((s) => s.traceId === traceId)
    const named = (name: string) => inTrace().find((s) => s.name === name)
    const expected = [
      'POST /api/v1/interns',
      'publish intern.provision',
      'process intern.provision',
      'provision step vault',
      'provision step hostname',
      'provision step configure',
      'provision step start',
      'provision step health',
      'runtime PUT /v1/interns/{id}',
      'runtime POST /v1/interns/{id}/start',
      'PUT /v1/interns/:id',
      'POST /v1/interns/:id/start',
    ]
    await waitFor(() => expected.every(named), {
      timeoutMs: 15_000,
      what: `every span of the create's trace (have: ${inTrace()
        .map((s) => s.name)
        .join(', ')})`,
    })

    const span = (name: string) => named(name)!
    const parentOf = (name: string) => inTrace().find((s) => s.spanId === span(name).parentSpanId)?.name
    expect(span('POST /api/v1/interns')).toMatchObject({
      service: 'roster-api',
      kind: SPAN_KIND.server,
      parentSpanId: '00f067aa0ba902b7',
    })
    expect(span('POST /api/v1/interns').attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/api/v1/interns',
      'http.response.status_code': 201,
    })
    expect(span('publish intern.provision')).toMatchObject({ service: 'roster-worker', kind: SPAN_KIND.producer })
    expect(parentOf('publish intern.provision')).toBe('POST /api/v1/interns')
    expect(span('process intern.provision')).toMatchObject({ kind: SPAN_KIND.consumer })
    expect(span('process intern.provision').attributes['messaging.message.id']).toBe(`intern.provision.${id}.1`)
    expect(parentOf('process intern.provision')).toBe('publish intern.provision')
    for (const step of ['vault', 'hostname', 'configure', 'start', 'health'])
      expect(parentOf(`provision step ${step}`)).toBe('process intern.provision')
    expect(parentOf('runtime PUT /v1/interns/{id}')).toBe('provision step configure')
    expect(span('runtime PUT /v1/interns/{id}').kind).toBe(SPAN_KIND.client)
    expect(span('PUT /v1/interns/:id')).toMatchObject({ service: 'roster-runtime', kind: SPAN_KIND.server })
    expect(parentOf('PUT /v1/interns/:id')).toBe('runtime PUT /v1/interns/{id}')
    expect(parentOf('POST /v1/interns/:id/start')).toBe('runtime POST /v1/interns/{id}/start')
    // One tree: every span's parent is in the trace, but the caller's.
    for (const s of inTrace())
      if (s.parentSpanId !== '00f067aa0ba902b7')
        expect(
          inTrace().some((p) => p.spanId === s.parentSpanId),
          s.name,
        ).toBe(true)
    // No credential, intern id or key in a span name (ids are attributes).
    for (const s of spans) expect(s.name).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}|sk-roster/)
    for (const body of bodies) expect(body).not.toContain(stack.env.RUNTIME_TOKEN!)
  })

  it("records each upstream model call with the GenAI semantic conventions' attributes, under the request's span", async () => {
    const res = await fetch(`${stack.apiUrl}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'roster-sim/chat', input: 'hello', max_output_tokens: 50, temperature: 0.5 }),
    })
    expect(res.status).toBe(200)
    // The request's span ends after the model call's (with the reply), and may come in a later export.
    const callSpan = () => spans.find((s) => s.name === 'chat roster-sim/chat')
    await waitFor(() => !!callSpan() && spans.some((s) => s.spanId === callSpan()!.parentSpanId), {
      timeoutMs: 15_000,
      what: 'the model call span and its parent',
    })
    const call = callSpan()!
    const parent = spans.find((s) => s.spanId === call.parentSpanId)
    expect(parent).toMatchObject({ name: 'POST /api/v1/responses', service: 'roster-api', kind: SPAN_KIND.server })
    expect(call.kind).toBe(SPAN_KIND.client)
    expect(call.attributes).toMatchObject({
      [semconv.ATTR_GEN_AI_OPERATION_NAME]: semconv.GEN_AI_OPERATION_NAME_VALUE_CHAT,
      [semconv.ATTR_GEN_AI_PROVIDER_NAME]: 'upstream-sim',
      [semconv.ATTR_GEN_AI_REQUEST_MAX_TOKENS]: 50,
      [semconv.ATTR_GEN_AI_REQUEST_TEMPERATURE]: 0.5,
      [semconv.ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: ['stop'],
    })
    expect(call.attributes[semconv.ATTR_GEN_AI_REQUEST_MODEL]).toEqual(expect.any(String))
    expect(call.attributes[semconv.ATTR_GEN_AI_USAGE_INPUT_TOKENS]).toBeGreaterThan(0)
    expect(call.attributes[semconv.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]).toBe(3)
    // Every gen_ai.* attribute is one the published conventions define.
    const known = new Set<string>(
      Object.entries(semconv)
        .filter(([k]) => k.startsWith('ATTR_GEN_AI_'))
        .map(([, v]) => String(v)),
    )
    for (const key of Object.keys(call.attributes).filter((k) => k.startsWith('gen_ai.')))
      expect(known.has(key), key).toBe(true)
  })
})
