import { afterAll, beforeAll, expect, it } from 'vitest'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startSimulator, type Simulator } from '@roster/upstream-sim'
import { simulatorCatalogue } from '@roster/gateway'
import { describeNeeding, freePort, repoRoot, startStack, waitFor, type Stack, useTestTenant } from '@roster/testing'

// A real Prometheus (Debian's prometheus package; .ci/run installs it) scrapes a running stack
// (API, worker, runtime host, each with METRICS_PORT) with deploy/'s alert rules loaded, while
// interns are created and provisioned and the gateway answers; PromQL sees the counters move.

const env = useTestTenant()
let sim: Simulator
let stack: Stack
let prometheus: ChildProcess
let promUrl = ''
let promLog = ''

beforeAll(async () => {
  sim = await startSimulator({ replyTokens: 3 })
  const dir = mkdtempSync(join(tmpdir(), 'roster-prometheus-'))
  writeFileSync(join(dir, 'models.json'), JSON.stringify(simulatorCatalogue(sim.url)))
  stack = await startStack({
    databaseUrl: env.t.url,
    metrics: true,
    env: { MODEL_CATALOGUE: join(dir, 'models.json') },
  })
  const target = (port: number | undefined) => `'127.0.0.1:${port}'`
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      `rule_files: ['${join(repoRoot, 'deploy/prometheus/alerts.yml')}']`,
      'scrape_configs:',
      `  - { job_name: roster-api, static_configs: [{ targets: [${target(stack.metricsPorts.api)}] }] }`,
      `  - { job_name: roster-worker, static_configs: [{ targets: [${stack.metricsPorts.workers.map(target).join(', ')}] }] }`,
      `  - { job_name: roster-runtime, static_configs: [{ targets: [${target(stack.metricsPorts.runtime)}] }] }`,
    ].join('\n'),
  )
  const port = await freePort()
  promUrl = `http://127.0.0.1:${port}`
  prometheus = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  prometheus.stderr!.on('data', (d) => (promLog += d))
  await waitFor(async () => (await fetch(`${promUrl}/-/ready`).catch(() => undefined))?.status === 200, {
    timeoutMs: 30_000,
    what: `Prometheus to be ready (${promLog.slice(-300)})`,
  })
})
afterAll(async () => {
  prometheus?.kill()
  await stack?.stop()
  await sim?.close()
})

/** One PromQL instant query: the first sample's value (NaN when there is none). */
async function query(expr: string): Promise<number> {
  const res = (await (await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`)).json()) as any
  if (res.status !== 'success') throw new Error(`${expr}: ${res.error}`)
  return res.data.result.length ? Number(res.data.result[0].value[1]) : Number.NaN
}

await describeNeeding(['prometheus'], 'Prometheus scraping Roster', () => {
  it('scrapes every process, and PromQL sees creates, provisioning, the queue, the outbox and the gateway move', async () => {
    await waitFor(async () => (await query('sum(up)')) === 2 + stack.metricsPorts.workers.length, {
      timeoutMs: 30_000,
      what: 'every target up',
    })
    expect(await query('sum(roster_intern_creates_total{outcome="created"})')).toBeNaN()

    const headers = { authorization: `Bearer ${env.tenant.keys.user}`, 'content-type': 'application/json' }
    const ids: string[] = []
    for (let i = 0; i < 10; i++)
      ids.push(
        (
          await (
            await fetch(`${stack.apiUrl}/interns`, {
              method: 'POST',
              headers,
              body: JSON.stringify({ name: `scraped-${i}`, provision: true }),
            })
          ).json()
        ).id,
      )
    await waitFor(
      async () =>
        (
          await Promise.all(
            ids.map(async (id) => (await (await fetch(`${stack.apiUrl}/interns/${id}`, { headers })).json()).status),
          )
        ).every((s) => s === 'running'),
      { timeoutMs: 30_000, what: 'the interns to run' },
    )
    expect(
      (
        await fetch(`${stack.apiUrl}/responses`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ model: 'roster-sim/chat', input: 'hello' }),
        })
      ).status,
    ).toBe(200)

    const expectations: [string, (v: number) => boolean][] = [
      ['sum(roster_intern_creates_total{outcome="created"})', (v) => v === 10],
      [
        'sum(roster_http_request_duration_seconds_count{process="api",route="/api/v1/interns",method="POST",status="201"})',
        (v) => v === 10,
      ],
      ['sum(roster_provisioning_runs_total{outcome="running"})', (v) => v === 10],
      ['sum(roster_provisioning_step_duration_seconds_count{step="health",outcome="ok"})', (v) => v === 10],
      ['sum(roster_outbox_publish_lag_seconds_count)', (v) => v >= 10],
      ['count(roster_queue_jobs)', (v) => v === 5 * stack.metricsPorts.workers.length],
      ['max(roster_outbox_rows)', (v) => v === 0],
      ['sum(roster_gateway_requests_total{model="roster-sim/chat",door="responses",outcome="ok"})', (v) => v === 1],
      ['sum(roster_gateway_tokens_total{model="roster-sim/chat",kind="output"})', (v) => v > 0],
      ['sum(roster_gateway_upstream_first_byte_seconds_count)', (v) => v >= 1],
      [
        'sum(roster_http_request_duration_seconds_count{process="runtime",route="/v1/interns/:id/start"})',
        (v) => v >= 10,
      ],
      ['max(roster_process_resident_memory_bytes{process="worker"})', (v) => v > 0],
      // Spend as the ledger wrote it, by workspace and model: the one call's cost and tokens.
      [
        `sum(roster_spend_usd_total{workspace="${env.tenant.workspaceId}",model="roster-sim/chat",byok="false"})`,
        (v) => v > 0,
      ],
      [
        `sum(roster_spend_tokens_total{workspace="${env.tenant.workspaceId}",model="roster-sim/chat",kind="output"})`,
        (v) => v > 0,
      ],
    ]
    for (const [expr, ok] of expectations) {
      await waitFor(async () => ok(await query(expr)), {
        timeoutMs: 30_000,
        what: `${expr} (now ${await query(expr)})`,
      })
    }

    // The spend metrics agree with the ledger: the workspace's generations' cost, summed exactly.
    const ledger = await env.t.db.generation.aggregate({
      where: { workspaceId: env.tenant.workspaceId },
      _sum: { costPico: true, tokensCompletion: true },
    })
    const spendOf = `{workspace="${env.tenant.workspaceId}"}`
    expect(await query(`sum(roster_spend_usd_total${spendOf})`)).toBeCloseTo(Number(ledger._sum.costPico) / 1e12, 12)
    expect(await query(`sum(roster_spend_tokens_total{workspace="${env.tenant.workspaceId}",kind="output"})`)).toBe(
      ledger._sum.tokensCompletion,
    )

    // Labels are bounded: no intern id, hostname or key anywhere in what the processes export; an id
    // only as the spend metrics' workspace.
    for (const port of [stack.metricsPorts.api, stack.metricsPorts.runtime, ...stack.metricsPorts.workers]) {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
      expect(text).toMatch(/^# HELP roster_/m)
      for (const id of ids) expect(text).not.toContain(id)
      const rest = text
        .split('\n')
        .filter((line) => !line.startsWith('roster_spend_'))
        .join('\n')
      expect(rest).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/)
      expect(text).not.toContain('sk-roster')
    }
  })

  it("loads deploy/'s alert rules, and every expression of the Grafana dashboard is valid PromQL over metrics that exist", async () => {
    const rules = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as any
    const loaded = rules.data.groups.flatMap((g: any) => g.rules)
    expect(loaded.map((r: any) => r.name).sort()).toEqual([
      'RosterGatewayErrors',
      'RosterOutboxStuck',
      'RosterProvisioningFailing',
      'RosterQueueWaitGrowing',
      'RosterReconcilerRepairing',
    ])
    await waitFor(
      async () =>
        ((await (await fetch(`${promUrl}/api/v1/rules`)).json()) as any).data.groups
          .flatMap((g: any) => g.rules)
          .every((r: any) => r.health === 'ok'),
      { timeoutMs: 15_000, what: 'every rule evaluated' },
    )
    const dashboard = JSON.parse(readFileSync(join(repoRoot, 'deploy/grafana/roster-dashboard.json'), 'utf8'))
    // Metrics the processes declare (a labelled one with no samples yet has only its HELP line).
    const names = new Set<string>()
    for (const port of [stack.metricsPorts.api, stack.metricsPorts.runtime, ...stack.metricsPorts.workers]) {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
      for (const m of text.matchAll(/^# HELP (\S+)/gm)) {
        names.add(m[1]!)
        // A histogram's series carry suffixes.
        for (const suffix of ['_bucket', '_count', '_sum']) names.add(`${m[1]}${suffix}`)
      }
    }
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) {
        await query(target.expr) // throws on invalid PromQL
        for (const metric of target.expr.match(/roster_[a-z0-9_]+/g) ?? [])
          expect(names, `${panel.title}: ${metric}`).toContain(metric)
      }
    }
  })

  it("passes promtool's checks: deploy/'s alert rules and scrape configuration", () => {
    for (const args of [
      ['check', 'rules', 'deploy/prometheus/alerts.yml'],
      ['check', 'config', 'deploy/prometheus/prometheus.yml'],
    ]) {
      const run = spawnSync('promtool', args, { cwd: repoRoot, encoding: 'utf8' })
      expect(run.status, `${run.stdout}${run.stderr}`).toBe(0)
    }
  })
})
