import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Counter, Histogram, Registry } from 'prom-client'
import { TalliedCounter, TalliedHistogram } from './tallied-metrics.js'

// The tallied metrics expose exactly what prom-client's own would for the same observations: the
// same HELP and TYPE lines and the same samples, series for series (a sample's labels compared as a
// set: their order in a line means nothing to Prometheus), under generated labels and observations.
const BUCKETS = [0.001, 0.01, 0.1, 1, 10]
const labelValue = fc.constantFrom('a', 'b', 'sim/chat', 'upstream-sim', '(unmatched)', 'with "quotes"', 'new\nline')

async function both(ops: { labels: { m: string; k: string }; value: number }[]) {
  const theirs = new Registry()
  const ours = new Registry()
  for (const r of [theirs, ours]) r.setDefaultLabels({ process: 'api' })
  const c1 = new Counter({ name: 'c_total', help: 'counted', labelNames: ['m', 'k'] as const, registers: [theirs] })
  const h1 = new Histogram({
    name: 'h_seconds',
    help: 'timed',
    labelNames: ['m'] as const,
    buckets: BUCKETS,
    registers: [theirs],
  })
  const c2 = new TalliedCounter({
    name: 'c_total',
    help: 'counted',
    labelNames: ['m', 'k'] as const,
    registers: [ours],
  })
  const h2 = new TalliedHistogram({
    name: 'h_seconds',
    help: 'timed',
    labelNames: ['m'] as const,
    buckets: BUCKETS,
    registers: [ours],
  })
  for (const { labels, value } of ops) {
    c1.inc(labels, value)
    c2.inc(labels, value)
    h1.observe({ m: labels.m }, value)
    h2.observe({ m: labels.m }, value)
  }
  return [normalized(await theirs.metrics()), normalized(await ours.metrics())]
}

/** The exposition's lines with each sample's labels sorted, the lines in order. */
function normalized(text: string): string[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const m = /^([^{\s]+)\{(.*)\} (.+)$/.exec(line)
      if (!m) return line
      const labels = m[2]!.match(/[a-z_]+="(?:[^"\\]|\\.)*"/g) ?? []
      return `${m[1]}{${labels.sort().join(',')}} ${m[3]}`
    })
    .sort()
}

describe('tallied metrics', () => {
  it('expose the text prom-client exposes for the same observations', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            labels: fc.record({ m: labelValue, k: labelValue }),
            value: fc.oneof(fc.constantFrom(0, 0.001, 0.01, 10, 11), fc.double({ min: 0, max: 20, noNaN: true })),
          }),
          { maxLength: 40 },
        ),
        async (ops) => {
          const [theirs, ours] = await both(ops)
          expect(ours).toEqual(theirs)
        },
      ),
      { numRuns: 200 },
    )
  })

  it('refuses what prom-client refuses: a counter going down, a value that is not a number', () => {
    const r = new Registry()
    const c = new TalliedCounter({ name: 'x_total', help: 'x', labelNames: ['a'] as const, registers: [r] })
    const h = new TalliedHistogram({ name: 'y', help: 'y', labelNames: ['a'] as const, buckets: [1], registers: [r] })
    expect(() => c.inc({ a: '1' }, -1)).toThrow(/only goes up/)
    expect(() => h.observe({ a: '1' }, Number.NaN)).toThrow(/cannot observe/)
  })
})
