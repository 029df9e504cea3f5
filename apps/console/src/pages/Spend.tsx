import { useCallback, useEffect, useMemo, useRef } from 'react'
import { TableScroll } from '../listed'
import { useQuery } from '@tanstack/react-query'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { api } from '../api'
import { href, replaceQuery, type Route } from '../router'

// Spend over the hourly rollups (POST /analytics/query), bucketed by day on the server in the time
// zone chosen (the browser's own by default), by model, key, member or workspace. One query feeds
// the chart, the table and the CSV, so every total is the sum of the rows shown; a day opens the
// generations behind it. The filters live in the URL.

const BY = { model: 'Model', api_key_id: 'Key', user: 'Member', workspace: 'Workspace' } as const
type By = keyof typeof BY
const RANGES = ['7', '30', '90'] as const

interface Row {
  date: string
  [group: string]: string | number | null
  total_cost: number
  request_count: number
}

const DAY_MS = 86_400_000

export default function Spend({ route }: { route: Route }) {
  const zone = route.query.get('tz') || Intl.DateTimeFormat().resolvedOptions().timeZone
  const days = (RANGES as readonly string[]).includes(route.query.get('days') ?? '') ? route.query.get('days')! : '30'
  const by = (route.query.get('by') ?? 'model') as By
  const group = by in BY ? by : 'model'
  // Whole days of the range, ending now (the server buckets them in the zone).
  const range = useMemo(() => {
    const end = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000)
    return { start: new Date(end.getTime() - Number(days) * DAY_MS).toISOString(), end: end.toISOString() }
  }, [days])
  const spend = useQuery({
    queryKey: ['spend', zone, days, group],
    queryFn: () =>
      api<{ data: { data: Row[]; metadata: { truncated: boolean } } }>('analytics/query', {
        method: 'POST',
        body: JSON.stringify({
          metrics: ['total_cost', 'request_count'],
          dimensions: [group],
          granularity: 'day',
          time_zone: zone,
          time_range: range,
          limit: 10_000,
        }),
      }),
  })
  // What the account's credits allow, and what its generations used of them (every member's spend draws on them).
  const credits = useQuery({
    queryKey: ['credits'],
    queryFn: () => api<{ data: { total_credits: number; total_usage: number; unlimited: boolean } }>('credits'),
    retry: false,
  })
  const rows = spend.data?.data.data ?? []
  const byDay = useMemo(() => {
    const sums = new Map<string, { cost: number; requests: number }>()
    for (const r of rows) {
      const s = sums.get(r.date) ?? { cost: 0, requests: 0 }
      s.cost += r.total_cost
      s.requests += r.request_count
      sums.set(r.date, s)
    }
    return [...sums.entries()].sort(([a], [b]) => a.localeCompare(b))
  }, [rows])
  const byGroup = useMemo(() => {
    const sums = new Map<string, { cost: number; requests: number }>()
    for (const r of rows) {
      const name = String(r[group] ?? '(none)')
      const s = sums.get(name) ?? { cost: 0, requests: 0 }
      s.cost += r.total_cost
      s.requests += r.request_count
      sums.set(name, s)
    }
    return [...sums.entries()].sort(([, a], [, b]) => b.cost - a.cost)
  }, [rows, group])
  const total = byGroup.reduce((t, [, s]) => ({ cost: t.cost + s.cost, requests: t.requests + s.requests }), {
    cost: 0,
    requests: 0,
  })
  const dayLabel = useCallback((iso: string) => new Date(iso).toLocaleDateString(undefined, { timeZone: zone }), [zone])
  /** The generations of one bucket: from its start to the next day's in the zone. */
  const dayHref = (iso: string) => {
    const next = byDayNext(iso)
    return href(['generations'], { from: iso, to: next })
  }
  const byDayNext = (iso: string) => {
    // The next bucket's start, or a day on (a day-light-saving change makes some 23 or 25 hours).
    const starts = byDay.map(([d]) => d)
    const after = starts.find((d) => d > iso)
    return after && new Date(after).getTime() - new Date(iso).getTime() <= DAY_MS + 3_600_000
      ? after
      : new Date(new Date(iso).getTime() + DAY_MS).toISOString()
  }

  const csv = () => {
    const quote = (v: unknown) => `"${String(v ?? '').replace(/"/g, '""')}"`
    const lines = [
      ['date', group, 'total_cost_usd', 'requests'].join(','),
      ...rows.map((r) => [r.date, r[group], r.total_cost, r.request_count].map(quote).join(',')),
    ]
    const link = document.createElement('a')
    link.href = URL.createObjectURL(new Blob([lines.join('\n') + '\n'], { type: 'text/csv' }))
    link.download = `roster-spend-${days}d-by-${group}.csv`
    link.click()
    URL.revokeObjectURL(link.href)
  }

  return (
    <section aria-labelledby="spend-title">
      <h1 id="spend-title">Spend</h1>
      {credits.data && (
        <p>
          The account’s credits: ${credits.data.data.total_usage.toFixed(4)} used
          {credits.data.data.unlimited
            ? ' (no limit granted)'
            : ` of $${credits.data.data.total_credits.toFixed(2)}, $${Math.max(0, credits.data.data.total_credits - credits.data.data.total_usage).toFixed(4)} left`}
          .
        </p>
      )}
      <div className="filters">
        <label>
          Days{' '}
          <select value={days} onChange={(e) => replaceQuery(route, { days: e.target.value })}>
            {RANGES.map((d) => (
              <option key={d} value={d}>
                last {d}
              </option>
            ))}
          </select>
        </label>
        <label>
          By{' '}
          <select value={group} onChange={(e) => replaceQuery(route, { by: e.target.value })}>
            {Object.entries(BY).map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </select>
        </label>
        <label>
          Time zone{' '}
          <select value={zone} onChange={(e) => replaceQuery(route, { tz: e.target.value })}>
            {zones(zone).map((z) => (
              <option key={z}>{z}</option>
            ))}
          </select>
        </label>
        <button type="button" onClick={csv} disabled={!rows.length}>
          Download CSV
        </button>
      </div>
      {spend.isPending ? (
        <p aria-busy="true">Loading spend…</p>
      ) : spend.isError ? (
        <p role="alert">{spend.error.message}</p>
      ) : rows.length === 0 ? (
        <p>Nothing was spent in these days.</p>
      ) : (
        <>
          <p>
            <strong>
              ${total.cost.toFixed(4)} over {total.requests} requests
            </strong>
            {spend.data.data.metadata.truncated && ' (the first 10,000 rows: narrow the range)'}
          </p>
          <Bars days={byDay} range={range} label={dayLabel} onOpen={(iso) => (window.location.hash = dayHref(iso))} />
          <h2>By {BY[group].toLowerCase()}</h2>
          <TableScroll label="Spend by day">
            <table>
              <thead>
                <tr>
                  <th scope="col">{BY[group]}</th>
                  <th scope="col">Cost</th>
                  <th scope="col">Requests</th>
                </tr>
              </thead>
              <tbody>
                {byGroup.map(([name, s]) => (
                  <tr key={name}>
                    <td>{name}</td>
                    <td>${s.cost.toFixed(6)}</td>
                    <td>{s.requests}</td>
                  </tr>
                ))}
              </tbody>
              <tfoot>
                <tr>
                  <th scope="row">Total</th>
                  <td>${total.cost.toFixed(6)}</td>
                  <td>{total.requests}</td>
                </tr>
              </tfoot>
            </table>
          </TableScroll>
          <h2>By day</h2>
          <ul className="days">
            {byDay.map(([iso, s]) => (
              <li key={iso}>
                <a href={dayHref(iso)}>{dayLabel(iso)}</a>: ${s.cost.toFixed(6)}, {s.requests} requests
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  )
}

/** The zones offered: the one in use first, then every zone this browser knows. */
function zones(current: string): string[] {
  const all = (Intl as { supportedValuesOf?: (k: string) => string[] }).supportedValuesOf?.('timeZone') ?? []
  return [current, ...all.filter((z) => z !== current), ...(current === 'UTC' || all.includes('UTC') ? [] : ['UTC'])]
}

/** Each day's cost as a bar (uPlot); a click on a bar opens that day. The list below is its text. */
function Bars({
  days,
  range,
  label,
  onOpen,
}: {
  days: [string, { cost: number }][]
  /** The time shown, whatever days had spend. */
  range: { start: string; end: string }
  label: (iso: string) => string
  onOpen: (iso: string) => void
}) {
  const box = useRef<HTMLDivElement>(null)
  const open = useRef(onOpen)
  open.current = onOpen
  useEffect(() => {
    const el = box.current
    if (!el || !days.length) return
    const xs = days.map(([iso]) => new Date(iso).getTime() / 1000)
    const plot = new uPlot(
      {
        width: Math.max(300, el.clientWidth),
        height: 220,
        legend: { show: false },
        scales: {
          // The days asked for, whichever had spend (half a day's margin for the bars at the edges).
          x: { time: true, range: [Date.parse(range.start) / 1000 - 43_200, Date.parse(range.end) / 1000 + 43_200] },
          y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
        },
        axes: [
          {
            stroke: 'currentColor',
            space: 80,
            values: (_u, splits) => splits.map((s) => label(new Date(s * 1000).toISOString())),
          },
          { stroke: 'currentColor', size: 80, values: (_u, splits) => splits.map((s) => `$${s}`) },
        ],
        series: [
          {},
          {
            label: 'Cost',
            fill: 'rgba(11, 92, 213, 0.6)',
            stroke: 'rgb(11, 92, 213)',
            paths: uPlot.paths.bars!({ size: [0.7, 60] }),
            points: { show: false },
          },
        ],
        hooks: {
          ready: [
            (u) =>
              u.over.addEventListener('click', () => {
                const idx = u.cursor.idx
                if (idx !== null && idx !== undefined) open.current(days[idx]![0])
              }),
          ],
        },
      },
      [xs, days.map(([, s]) => s.cost)],
      el,
    )
    return () => plot.destroy()
  }, [days, range, label])
  return <div ref={box} className="chart" role="img" aria-label="Cost per day (the list below gives each day)" />
}
