// Interns that work without anyone typing (issue 61): BENCH_SCHEDULE_INTERNS (1,000) interns on three
// runtime hosts, each with a schedule firing every minute, two workers, one of them killed with
// SIGKILL just after a minute's fires begin (and another started). Read from the record afterwards:
// how late each fire was (its turn queued, its turn started on the host), and whether any fire
// was run twice or lost (counted once the minute after the window has fired as well: a fire whose
// job BullMQ never added, its workers that far behind, is dealt with by the next one).
//
//   npm run bench -- schedules      BENCH_SCHEDULE_INTERNS (1,000), BENCH_SCHEDULE_MINUTES (3)
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { Queue } from 'bullmq'

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const pct = (xs, p) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN
}
const headers = (key) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })

/** Runs `work` over `items` with `width` at once. */
async function pool(items, width, work) {
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++])
    }),
  )
}

export async function benchSchedules(
  { key, db, base, startWorker, firstWorker, queuePrefix },
  { createInterns, countRunning },
) {
  const n = Number(process.env.BENCH_SCHEDULE_INTERNS ?? 1000)
  const minutes = Number(process.env.BENCH_SCHEDULE_MINUTES ?? 3)
  const client = new pg.Client({ connectionString: db })
  await client.connect()
  const prefix = `s${randomBytes(2).toString('hex')}`
  await createInterns(key, prefix, n)
  while ((await countRunning(client, prefix)) < n) await sleep(200)
  startWorker()
  const { rows: interns } = await client.query(`SELECT id FROM interns WHERE name LIKE $1`, [`${prefix}%`])
  await pool(interns, 32, async ({ id }) => {
    const res = await fetch(`${base}/interns/${id}/schedules`, {
      method: 'POST',
      headers: headers(key),
      body: JSON.stringify({ name: 'tick', cron: '* * * * *', prompt: 'Note the time.', approval_mode: 'self-drive' }),
    })
    if (res.status !== 201) throw new Error(`a schedule was refused: ${res.status} ${await res.text()}`)
  })
  // The first whole minute after every schedule is armed (its job scheduler in Redis), then `minutes` fires each.
  const queue = new Queue('interns', { connection: { host: '127.0.0.1', port: 6379 }, prefix: queuePrefix })
  while ((await queue.getJobSchedulersCount()) < n) await sleep(200)
  await queue.close()
  const first = Math.ceil((Date.now() + 1_000) / 60_000) * 60_000
  const fires = Array.from({ length: minutes }, (_, i) => first + i * 60_000)
  process.stderr.write(`  ${n} schedules armed; fires at ${fires.map((t) => new Date(t).toISOString()).join(', ')}\n`)
  // Mid-fire of the second minute: a worker killed with SIGKILL, another started.
  const killAt = (fires[1] ?? fires[0]) + 300
  await sleep(killAt - Date.now())
  firstWorker.kill('SIGKILL')
  process.stderr.write(`  worker ${firstWorker.pid} killed (SIGKILL) at ${new Date().toISOString()}\n`)
  startWorker()
  // A fire whose job BullMQ never added (workers that far behind) is dealt with by the fire after
  // it: the window's fires are counted once the minute after the last has fired too.
  await sleep(fires.at(-1) + 65_000 - Date.now())
  // Every turn of the window ended (or given up on after 3 minutes).
  for (const until = Date.now() + 180_000; Date.now() < until; await sleep(1_000)) {
    const { rows } = await client.query(
      `SELECT count(*)::int AS n FROM intern_turns t JOIN interns i ON i.id = t.intern_id
       WHERE i.name LIKE $1 AND t.state IN ('queued', 'running') AND t.scheduled_for <= $2`,
      [`${prefix}%`, new Date(fires.at(-1))],
    )
    if (rows[0].n === 0) break
  }
  const { rows: turns } = await client.query(
    `SELECT t.schedule_id, t.scheduled_for, t.created_at, t.started_at, t.state
     FROM intern_turns t JOIN interns i ON i.id = t.intern_id
     WHERE i.name LIKE $1 AND t.scheduled_for >= $2 AND t.scheduled_for <= $3`,
    [`${prefix}%`, new Date(first), new Date(fires.at(-1))],
  )
  await client.end()
  const perFire = new Map()
  for (const t of turns) {
    const k = `${t.schedule_id} ${t.scheduled_for.getTime()}`
    perFire.set(k, (perFire.get(k) ?? 0) + 1)
  }
  const expected = n * fires.length
  const onGrid = turns.filter((t) => fires.includes(t.scheduled_for.getTime()))
  const twice = [...perFire.values()].filter((c) => c > 1).length
  const lost = expected - new Set(onGrid.map((t) => `${t.schedule_id} ${t.scheduled_for.getTime()}`)).size
  for (const f of fires)
    process.stderr.write(
      `  fire ${new Date(f).toISOString()}: ${onGrid.filter((t) => t.scheduled_for.getTime() === f).length} of ${n} turns\n`,
    )
  const queued = onGrid.map((t) => (t.created_at - t.scheduled_for) / 1000)
  const started = onGrid.filter((t) => t.started_at).map((t) => (t.started_at - t.scheduled_for) / 1000)
  const states = {}
  for (const t of onGrid) states[t.state] = (states[t.state] ?? 0) + 1
  const fmt = (xs) => `${pct(xs, 0.5).toFixed(2)} / ${pct(xs, 0.99).toFixed(2)} / ${Math.max(...xs).toFixed(2)}`
  return [
    {
      scenario: `${n} interns × a schedule every minute, ${fires.length} minutes, three runtime hosts, two workers (one SIGKILLed mid-fire): fire → turn queued`,
      metric: 'p50 / p99 / max s',
      value: fmt(queued),
      target: 'p99 ≤ 2',
    },
    {
      scenario: '  fire → turn started on the intern’s host',
      metric: 'p50 / p99 / max s',
      value: fmt(started),
      target: '',
    },
    { scenario: '  fires run twice', metric: 'count', value: String(twice), target: '0' },
    { scenario: `  fires lost (of ${expected})`, metric: 'count', value: String(lost), target: '0' },
    {
      scenario: '  how the turns ended',
      metric: 'states',
      value: Object.entries(states)
        .map(([s, c]) => `${s} ${c}`)
        .join(', '),
      target: 'all done',
    },
  ]
}
