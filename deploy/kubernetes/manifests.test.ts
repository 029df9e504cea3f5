import { describe, expect, it } from 'vitest'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments, parse } from 'yaml'
import { ApiConfig, RuntimeConfig, WorkerConfig } from '@roster/shared'

// Every manifest in deploy/kubernetes, validated against the Kubernetes API's schemas (the
// kubernetes-models packages, generated from the API's OpenAPI; KEDA's from its CRDs), then held
// together: names that refer to each other exist, settings are ones Roster reads, commands exist.
const dir = import.meta.dirname
const root = join(dir, '..', '..')
type Manifest = {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; labels?: Record<string, string> }
  spec?: any
  data?: any
  stringData?: any
}

const files = readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
const manifests: (Manifest & { file: string })[] = files.flatMap((file) =>
  parseAllDocuments(readFileSync(join(dir, file), 'utf8'))
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => !!m)
    .map((m) => ({ ...m, file })),
)

/** The model class of each kind the manifests use, from the published packages. */
const MODELS: Record<string, () => Promise<Record<string, new (data: unknown) => { validate(): void }>>> = {
  'v1/Namespace': () => import('kubernetes-models/v1/Namespace'),
  'v1/Secret': () => import('kubernetes-models/v1/Secret'),
  'v1/ConfigMap': () => import('kubernetes-models/v1/ConfigMap'),
  'v1/Service': () => import('kubernetes-models/v1/Service'),
  'apps/v1/Deployment': () => import('kubernetes-models/apps/v1/Deployment'),
  'apps/v1/StatefulSet': () => import('kubernetes-models/apps/v1/StatefulSet'),
  'batch/v1/Job': () => import('kubernetes-models/batch/v1/Job'),
  'autoscaling/v2/HorizontalPodAutoscaler': () => import('kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler'),
  'policy/v1/PodDisruptionBudget': () => import('kubernetes-models/policy/v1/PodDisruptionBudget'),
  'keda.sh/v1alpha1/ScaledObject': () => import('@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject'),
}
async function modelOf(apiVersion: string, kind: string) {
  const load = MODELS[`${apiVersion}/${kind}`]
  if (!load) throw new Error(`no schema here for ${apiVersion} ${kind}: add its model to MODELS`)
  return (await load())[kind]!
}

const byKind = (kind: string) => manifests.filter((m) => m.kind === kind)
const named = (kind: string, name: string) => manifests.find((m) => m.kind === kind && m.metadata.name === name)
const workloads = () => manifests.filter((m) => ['Deployment', 'StatefulSet', 'Job'].includes(m.kind))
const containersOf = (m: Manifest) => m.spec.template.spec.containers as any[]

describe('the Kubernetes manifests', () => {
  it('are each valid against the Kubernetes API schemas of their kind', async () => {
    expect(manifests.length).toBeGreaterThanOrEqual(12)
    for (const m of manifests) {
      const Model = await modelOf(m.apiVersion, m.kind)
      const { file, ...doc } = m
      expect(() => new Model(doc).validate(), `${file}: ${m.kind} ${m.metadata.name}`).not.toThrow()
    }
  })

  it('would be caught if they were not (the validation is real)', async () => {
    const api = named('Deployment', 'roster-api')!
    const Deployment = await modelOf('apps/v1', 'Deployment')
    const { file: _, ...good } = api
    expect(() => new Deployment({ ...good, spec: { ...good.spec, replicas: 'two' } }).validate()).toThrow()
    const ScaledObject = await modelOf('keda.sh/v1alpha1', 'ScaledObject')
    const { file: __, ...scaled } = named('ScaledObject', 'roster-worker')!
    expect(() => new ScaledObject({ ...scaled, spec: { ...scaled.spec, scaleTargetRef: {} } }).validate()).toThrow()
  })

  it('are all listed in the kustomization, in one namespace', () => {
    const kustomization = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as {
      namespace: string
      resources: string[]
    }
    expect([...kustomization.resources].sort()).toEqual([...files].sort())
    for (const m of manifests)
      if (m.kind !== 'Namespace')
        expect(m.metadata.namespace, `${m.kind} ${m.metadata.name}`).toBe(kustomization.namespace)
  })

  it('have the API scaled by a HorizontalPodAutoscaler and the workers by KEDA on the queue backlog, prioritized and delayed jobs included', () => {
    const hpa = byKind('HorizontalPodAutoscaler')
    expect(hpa.map((h) => h.spec.scaleTargetRef)).toEqual([
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'roster-api' },
    ])
    const scaled = named('ScaledObject', 'roster-worker')!
    expect(scaled.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'roster-worker' })
    expect(named('Deployment', 'roster-worker')).toBeDefined()
    // At least one worker always runs: the outbox relay and the reconciler live there.
    expect(scaled.spec.minReplicaCount).toBeGreaterThanOrEqual(1)
    const prometheus = scaled.spec.triggers.find((t: any) => t.type === 'prometheus')
    for (const state of ['waiting', 'prioritized', 'delayed']) expect(prometheus.metadata.query).toContain(state)
    // The gauge it reads is one the workers export.
    const metric = /([a-z_]+)\{/.exec(prometheus.metadata.query)![1]!
    expect(readFileSync(join(root, 'packages/platform/src/metrics.ts'), 'utf8')).toContain(`name: '${metric}'`)
    // The wait list of the interns queue under the default prefix (BullMQ's key), on a Redis the worker knows.
    const redis = scaled.spec.triggers.find((t: any) => t.type === 'redis')
    const config = named('ConfigMap', 'roster-config')!
    expect(redis.metadata.listName).toBe(`${config.data.QUEUE_PREFIX}:interns:wait`)
    expect(named('Secret', 'roster-secrets')!.stringData).toHaveProperty(redis.metadata.addressFromEnv)
  })

  it('refer only to what exists: selectors, secrets and config, services, commands', () => {
    const secret = named('Secret', 'roster-secrets')!
    const config = named('ConfigMap', 'roster-config')!
    for (const w of workloads()) {
      const labels = w.spec.template.metadata.labels
      if (w.spec.selector)
        for (const [k, v] of Object.entries(w.spec.selector.matchLabels))
          expect(labels[k], `${w.kind} ${w.metadata.name} selector`).toBe(v)
      for (const c of containersOf(w)) {
        expect(c.image, `${w.metadata.name}`).toBe('roster:local')
        // The command runs a file the image has (built from this source).
        const script = (c.command as string[]).find((a) => a.endsWith('.js') || a.endsWith('.mjs'))!
        const source = script.replace('/dist/', '/src/').replace(/\.js$/, '.ts')
        expect(existsSync(join(root, script)) || existsSync(join(root, source)), `${w.metadata.name}: ${script}`).toBe(
          true,
        )
        for (const from of c.envFrom ?? []) {
          if (from.secretRef) expect(from.secretRef.name).toBe(secret.metadata.name)
          if (from.configMapRef) expect(from.configMapRef.name).toBe(config.metadata.name)
        }
        for (const e of c.env ?? [])
          if (e.valueFrom?.secretKeyRef) expect(secret.stringData).toHaveProperty(e.valueFrom.secretKeyRef.key)
        for (const probe of [c.readinessProbe, c.livenessProbe].filter(Boolean)) {
          const port = probe.httpGet.port
          if (typeof port === 'string')
            expect(
              c.ports.map((p: any) => p.name),
              `${w.metadata.name} probe port`,
            ).toContain(port)
        }
      }
    }
    for (const svc of byKind('Service')) {
      const target = workloads().find((w) =>
        Object.entries(svc.spec.selector).every(([k, v]) => w.spec.template.metadata.labels[k] === v),
      )
      expect(target, `Service ${svc.metadata.name} selects a workload`).toBeDefined()
      const ports = containersOf(target!).flatMap((c) => c.ports.map((p: any) => p.name))
      for (const p of svc.spec.ports) expect(ports).toContain(p.targetPort)
    }
    // The URLs the processes are given name Services that exist, on their ports.
    for (const url of [config.data.ROSTER_API_URL]) {
      const { hostname, port } = new URL(url)
      expect(
        named('Service', hostname)?.spec.ports.map((p: any) => String(p.port)),
        url,
      ).toContain(port)
    }
    // Each runtime host joins under its pod's name, at its address behind the headless Service of its StatefulSet.
    const runtime = named('StatefulSet', 'roster-runtime')!
    const env = Object.fromEntries(containersOf(runtime)[0].env.map((e: any) => [e.name, e.value ?? e.valueFrom]))
    expect(env.POD_NAME).toEqual({ fieldRef: { fieldPath: 'metadata.name' } })
    expect(env.RUNTIME_HOST_ID).toBe('$(POD_NAME)')
    const advertised = new URL(env.RUNTIME_ADVERTISE_URL.replace('$(POD_NAME)', 'roster-runtime-0'))
    expect(advertised.hostname).toBe(`roster-runtime-0.${runtime.spec.serviceName}.roster.svc.cluster.local`)
    const service = named('Service', runtime.spec.serviceName)!
    expect([service.spec.clusterIP, service.spec.ports.map((p: any) => String(p.port))]).toEqual([
      'None',
      [advertised.port],
    ])
    expect(runtime.spec.replicas).toBeGreaterThan(1)
    // A host holds no master key and no database credential: nothing of the shared Secret but the fleet's credential.
    expect(containersOf(runtime)[0].envFrom.some((f: any) => f.secretRef)).toBe(false)
    expect(Object.keys(env)).not.toContain('VAULT_MASTER_KEY')
    expect(Object.keys(env)).not.toContain('DATABASE_URL')
  })

  it('set only settings Roster reads', () => {
    // REDIS_ADDRESS is KEDA's; POD_NAME only feeds RUNTIME_HOST_ID and RUNTIME_ADVERTISE_URL.
    const known = new Set([
      ...Object.keys(ApiConfig.shape),
      ...Object.keys(WorkerConfig.shape),
      ...Object.keys(RuntimeConfig.shape),
      'REDIS_ADDRESS',
      'POD_NAME',
    ])
    const names = [
      ...Object.keys(named('ConfigMap', 'roster-config')!.data),
      ...Object.keys(named('Secret', 'roster-secrets')!.stringData),
      ...workloads().flatMap((w) => containersOf(w).flatMap((c) => (c.env ?? []).map((e: any) => e.name as string))),
    ]
    for (const name of names) expect(known.has(name), name).toBe(true)
  })
})
