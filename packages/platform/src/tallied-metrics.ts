import type { Registry } from 'prom-client'

// Metrics counted on every request (the HTTP timings, the gateway's requests, tokens, cost and
// upstream timings) kept in plain numbers and handed to prom-client only when scraped. prom-client's
// own Counter and Histogram check and sort a request's labels and hash them on every call (about a
// microsecond each, seven of them per gateway request); here a series is found by its label values
// joined in the declared order, and the exposition is built from the totals when Prometheus asks.
// The text is the same as prom-client's for the same observations (tallied-metrics.test.ts).

type Labels<L extends string> = Partial<Record<L, string | number>>

/** A sample as prom-client's registry formats it (its own metrics' `get()` answer the same shape). */
interface Sample {
  metricName?: string
  labels: Record<string, string | number>
  value: number
}
interface Exposed {
  name: string
  help: string
  type: 'counter' | 'histogram'
  values: Sample[]
  aggregator: 'sum'
}

interface Config<L extends string> {
  name: string
  help: string
  labelNames: readonly L[]
  registers: Registry[]
}

/** Series of one metric, by their label values joined in the declared order. */
class Series<L extends string, S> {
  private readonly byKey = new Map<string, { labels: Record<string, string | number>; state: S }>()
  constructor(
    private readonly labelNames: readonly L[],
    private readonly fresh: () => S,
  ) {}

  of(labels: Labels<L>): S {
    let key = ''
    for (const name of this.labelNames) key += `${labels[name] ?? ''}\u0001`
    let found = this.byKey.get(key)
    if (!found) {
      // A copy of just the declared labels: the caller's object may be reused or carry others.
      const own: Record<string, string | number> = {}
      for (const name of this.labelNames) if (labels[name] !== undefined) own[name] = labels[name]!
      found = { labels: own, state: this.fresh() }
      this.byKey.set(key, found)
    }
    return found.state
  }

  entries() {
    return this.byKey.values()
  }

  clear() {
    this.byKey.clear()
  }
}

abstract class Tallied<L extends string, S> {
  readonly name: string
  readonly help: string
  readonly aggregator = 'sum' as const
  protected readonly series: Series<L, S>

  constructor(config: Config<L>, fresh: () => S) {
    this.name = config.name
    this.help = config.help
    this.series = new Series(config.labelNames, fresh)
    // prom-client's registry formats whatever offers `get` (and `reset`): it takes this as it takes its own.
    for (const registry of config.registers)
      registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0])
  }

  reset() {
    this.series.clear()
  }
}

/** A counter: `inc(labels, n)`, as prom-client's. */
export class TalliedCounter<L extends string> extends Tallied<L, { value: number }> {
  readonly type = 'counter' as const
  constructor(config: Config<L>) {
    super(config, () => ({ value: 0 }))
  }

  inc(labels: Labels<L>, n = 1) {
    if (!(n >= 0) || !Number.isFinite(n)) throw new Error(`${this.name}: a counter only goes up (got ${n})`)
    this.series.of(labels).value += n
  }

  async get(): Promise<Exposed> {
    const values: Sample[] = []
    for (const { labels, state } of this.series.entries()) values.push({ value: state.value, labels })
    return { name: this.name, help: this.help, type: 'counter', values, aggregator: this.aggregator }
  }
}

/** A histogram: `observe(labels, value)`, its buckets cumulative when exposed, as prom-client's. */
export class TalliedHistogram<L extends string> extends Tallied<L, { counts: number[]; sum: number; count: number }> {
  readonly type = 'histogram' as const
  private readonly upper: readonly number[]

  constructor(config: Config<L> & { buckets: readonly number[] }) {
    const upper = [...config.buckets].sort((a, b) => a - b)
    super(config, () => ({ counts: new Array<number>(upper.length).fill(0), sum: 0, count: 0 }))
    this.upper = upper
  }

  observe(labels: Labels<L>, value: number) {
    if (!Number.isFinite(value)) throw new Error(`${this.name}: cannot observe ${value}`)
    const s = this.series.of(labels)
    s.sum += value
    s.count += 1
    // The first bucket the value fits (le: less than or equal); none: only +Inf takes it.
    for (let i = 0; i < this.upper.length; i++)
      if (value <= this.upper[i]!) {
        s.counts[i]! += 1
        break
      }
  }

  async get(): Promise<Exposed> {
    const values: Sample[] = []
    for (const { labels, state } of this.series.entries()) {
      let below = 0
      this.upper.forEach((le, i) => {
        below += state.counts[i]!
        values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le }, value: below })
      })
      values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: state.count })
      values.push({ metricName: `${this.name}_sum`, labels, value: state.sum })
      values.push({ metricName: `${this.name}_count`, labels, value: state.count })
    }
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: this.aggregator }
  }
}
