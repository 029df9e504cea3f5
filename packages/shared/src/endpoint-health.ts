import type { GenerationRecord } from '@roster/protocol'
import type { RedisClient } from './redis.js'

// Each provider endpoint's health, as the models page and `GET /models/{id}/endpoints` show it
// (uptime over 5 minutes, 30 minutes and a day; time to first token's percentiles over 30
// minutes), counted by the workers from the generations they drain, never on the gateway's path:
// every attempt a call made at an endpoint (its provider and the call's model) is a success or a
// failure (a rate-limited one counts as neither, as OpenRouter counts uptime), and a call's time to
// its first token falls in one bin of a fixed histogram. Counts live in Redis by the minute (for
// 35 minutes) and by the hour (for 25 hours), so any process reads them.

/** The histogram's bins' upper edges (ms); the last bin holds everything slower. */
const TTFT_EDGES = [50, 100, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 7_500, 10_000, 20_000]
const MINUTE_TTL_S = 35 * 60
const HOUR_TTL_S = 25 * 3_600

const minuteKey = (prefix: string, minute: number, endpoint: string) => `${prefix}:health:m:${minute}:${endpoint}`
const hourKey = (prefix: string, hour: number, endpoint: string) => `${prefix}:health:h:${hour}:${endpoint}`
const endpointOf = (model: string, provider: string) => `${model}|${provider}`

const binOf = (ms: number) => {
  const i = TTFT_EDGES.findIndex((edge) => ms <= edge)
  return i < 0 ? TTFT_EDGES.length : i
}

/** Counts drained records' attempts (one pipeline per batch). */
export async function countEndpointHealth(redis: RedisClient, prefix: string, records: readonly GenerationRecord[]) {
  const counts = new Map<string, Map<string, number>>()
  const add = (key: string, field: string) => {
    const fields = counts.get(key) ?? new Map<string, number>()
    fields.set(field, (fields.get(field) ?? 0) + 1)
    counts.set(key, fields)
  }
  for (const r of records) {
    const at = Date.parse(r.created_at)
    if (Number.isNaN(at)) continue
    const minute = Math.floor(at / 60_000)
    const hour = Math.floor(at / 3_600_000)
    for (const attempt of r.provider_responses) {
      if (attempt.status === 429) continue
      const field = attempt.status !== null && attempt.status >= 200 && attempt.status < 300 ? 'ok' : 'fail'
      const endpoint = endpointOf(r.model, attempt.provider_name)
      add(minuteKey(prefix, minute, endpoint), field)
      add(hourKey(prefix, hour, endpoint), field)
    }
    if (r.ttft_ms !== null && r.provider && r.finish_reason !== 'error')
      add(minuteKey(prefix, minute, endpointOf(r.model, r.provider)), `t${binOf(r.ttft_ms)}`)
  }
  if (counts.size === 0) return
  const pipeline = redis.pipeline()
  for (const [key, fields] of counts) {
    for (const [field, n] of fields) pipeline.hincrby(key, field, n)
    pipeline.expire(key, key.includes(':health:m:') ? MINUTE_TTL_S : HOUR_TTL_S)
  }
  await pipeline.exec()
}

export interface Percentiles {
  p50: number
  p75: number
  p90: number
  p99: number
}
export interface EndpointHealth {
  uptime_last_5m: number | null
  uptime_last_30m: number | null
  uptime_last_1d: number | null
  /** Time to first token (ms), each percentile the upper edge of its histogram bin. */
  latency_last_30m: Percentiles | null
}

const uptime = (ok: number, fail: number) => (ok + fail === 0 ? null : Math.round((ok / (ok + fail)) * 10_000) / 100)

function percentiles(bins: number[]): Percentiles | null {
  const total = bins.reduce((a, b) => a + b, 0)
  if (total === 0) return null
  const at = (q: number) => {
    let seen = 0
    for (let i = 0; i < bins.length; i++) {
      seen += bins[i]!
      if (seen >= q * total) return TTFT_EDGES[i] ?? TTFT_EDGES.at(-1)! * 2
    }
    return TTFT_EDGES.at(-1)! * 2
  }
  return { p50: at(0.5), p75: at(0.75), p90: at(0.9), p99: at(0.99) }
}

/** Each of a model's endpoints' health (by provider), read in one pipeline. */
export async function readEndpointHealth(
  redis: RedisClient,
  prefix: string,
  model: string,
  providers: readonly string[],
  now = Date.now(),
): Promise<Map<string, EndpointHealth>> {
  const minute = Math.floor(now / 60_000)
  const hour = Math.floor(now / 3_600_000)
  const pipeline = redis.pipeline()
  for (const provider of providers) {
    const endpoint = endpointOf(model, provider)
    for (let m = 0; m < 30; m++) pipeline.hgetall(minuteKey(prefix, minute - m, endpoint))
    for (let h = 0; h < 24; h++) pipeline.hgetall(hourKey(prefix, hour - h, endpoint))
  }
  const answers = ((await pipeline.exec()) ?? []).map(([err, v]) => (err ? {} : (v as Record<string, string>)))
  const out = new Map<string, EndpointHealth>()
  providers.forEach((provider, p) => {
    const mine = answers.slice(p * 54, (p + 1) * 54)
    const n = (h: Record<string, string>, f: string) => Number(h[f] ?? 0)
    const sum = (hs: Record<string, string>[], f: string) => hs.reduce((a, h) => a + n(h, f), 0)
    const minutes = mine.slice(0, 30)
    const hours = mine.slice(30)
    const last5 = minutes.slice(0, 5)
    out.set(provider, {
      uptime_last_5m: uptime(sum(last5, 'ok'), sum(last5, 'fail')),
      uptime_last_30m: uptime(sum(minutes, 'ok'), sum(minutes, 'fail')),
      uptime_last_1d: uptime(sum(hours, 'ok'), sum(hours, 'fail')),
      latency_last_30m: percentiles(
        TTFT_EDGES.map((_, i) => sum(minutes, `t${i}`)).concat(sum(minutes, `t${TTFT_EDGES.length}`)),
      ),
    })
  })
  return out
}
