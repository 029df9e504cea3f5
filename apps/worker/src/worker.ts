import { DelayedError, UnrecoverableError, Worker } from 'bullmq'
import {
  pingDatabase,
  createDb,
  createLogger,
  createInternEventPublisher,
  INTERN_QUEUE,
  reportConnectionErrors,
  createMetrics,
  spendMetrics,
  countEndpointHealth,
  serveMetrics,
  inSpan,
  SpanKind,
  TransitionBatcher,
  type Logger,
  type WorkerConfig,
  listeningConnection,
} from '@roster/shared'
import { FleetDriver, fleetTimes, hostCredentialKey } from '@roster/shared/fleet'
import { LocalVault } from '@roster/shared/vault'
import {
  keepGenerationPartitions,
  pruneAuditEvents,
  pruneConsoleSessions,
  pruneGenerationContent,
  listHosts,
  outboxBacklog,
  pruneJobLeases,
} from '@roster/shared/repositories'

import type { WorkerDeps } from './context.js'
import { createQueue, jobOptionsFor } from './queue.js'
import { OutboxRelay } from './relay.js'
import { GenerationDrain } from './generation-drain.js'
import { DestinationFanout, destinationsQueue, startDeliveries } from './destinations.js'
import { startOperatorSurface } from './operator.js'
import { Reconciler } from './reconciler.js'
import { assertRegistryComplete, handlerFor } from './registry.js'
import { startHealthServer } from './health.js'
import { sweepSchedules } from './schedules.js'
import { JobLeases } from './job-leases.js'

export interface RunningWorker {
  deps: WorkerDeps
  reconciler: Reconciler
  relay: OutboxRelay
  stop(): Promise<void>
}

/** Starts one worker process's parts: the job consumer, the outbox relay and the reconciler. */
export async function startWorker(
  config: WorkerConfig,
  log: Logger = createLogger('worker', config.LOG_LEVEL),
): Promise<RunningWorker> {
  assertRegistryComplete()
  const db = createDb({
    url: config.DATABASE_URL,
    poolSize: config.DATABASE_POOL_SIZE,
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
  })
  const { queue, connection: queueConnection } = createQueue(config, log)
  const jobOptions = jobOptionsFor(config)
  const internsChanged = createInternEventPublisher(queueConnection, config.QUEUE_PREFIX)
  const metrics = config.METRICS_PORT ? createMetrics('worker') : undefined
  const deps: WorkerDeps = {
    metrics,
    config,
    db,
    queue,
    log,
    vault: new LocalVault({ masterKey: config.VAULT_MASTER_KEY, lockTimeoutMs: 10_000 }),
    // Hosts are called with credentials derived from the master key (no host holds it).
    runtime: new FleetDriver(db, config.VAULT_MASTER_KEY && hostCredentialKey(config.VAULT_MASTER_KEY)),
    transitions: new TransitionBatcher(db, internsChanged),
    internsChanged,
  }

  // Workers block on Redis, so their connection must never give up on a command.
  const workerConnection = listeningConnection(config)
  reportConnectionErrors(workerConnection, log, 'worker: redis')
  const leases = new JobLeases(db, config.DATABASE_URL, config.JOB_LOCK_MS, log)
  await leases.start()
  const worker = new Worker(
    INTERN_QUEUE,
    async (job, token) => {
      const attempt = job.attemptsMade + 1
      const retryLater = async (ms: number): Promise<never> => {
        await job.moveToDelayed(Date.now() + ms, token)
        throw new DelayedError()
      }
      const finalAttempt = attempt >= (job.opts.attempts ?? 1)
      const counted = (outcome: string) => job.name === 'intern.provision' && metrics?.provisioningRuns.inc({ outcome })
      // A run of this job still going elsewhere (its worker stalled past the lock, not dead): this
      // one waits for it, not beside it (job-leases.ts).
      const holder = token ?? `${worker.id}:${job.id}`
      const lease = await leases.take(job.id!, holder)
      if (!('taken' in lease)) {
        log.info(
          { job: job.name, jobId: job.id, heldForMs: Math.round(lease.heldForMs) },
          'job still running elsewhere; waiting for it',
        )
        counted('waiting')
        return retryLater(lease.heldForMs + 100 + Math.random() * 400)
      }
      try {
        // The job continues the trace of the request that asked for it (its context came in the outbox row).
        const outcome = await inSpan(
          `process ${job.name}`,
          {
            kind: SpanKind.CONSUMER,
            parent: (job.data as { trace?: unknown }).trace ?? null,
            attributes: {
              'messaging.system': 'bullmq',
              'messaging.operation.type': 'process',
              'messaging.destination.name': INTERN_QUEUE,
              'messaging.message.id': job.id ?? '',
              'roster.job.attempt': attempt,
            },
          },
          () => handlerFor(job.name)(deps, job.data, { jobId: job.id, attempt, finalAttempt, log, retryLater }),
        )
        log.info({ job: job.name, jobId: job.id, attempt, outcome }, 'job finished')
        counted(String(outcome))
        return outcome
      } catch (err) {
        if (err instanceof DelayedError) counted('waiting')
        else counted(finalAttempt || err instanceof UnrecoverableError ? 'failed' : 'retry')
        throw err
      } finally {
        await leases.release(job.id!, holder)
      }
    },
    {
      connection: workerConnection,
      prefix: config.QUEUE_PREFIX,
      concurrency: config.WORKER_CONCURRENCY,
      lockDuration: config.JOB_LOCK_MS,
      stalledInterval: Math.max(1_000, Math.floor(config.JOB_LOCK_MS / 2)),
      // A job whose worker died is retried, not failed: its steps are idempotent.
      maxStalledCount: 20,
    },
  )
  reportConnectionErrors(worker, log, 'worker')
  worker.on('failed', (job, err) =>
    log.warn({ jobId: job?.id, attempt: job?.attemptsMade, err: err.message }, 'job attempt failed'),
  )

  const relay = new OutboxRelay(db, queue, config, config.QUEUE_PREFIX, config.RELAY_POLL_MS, jobOptions, log, metrics)
  deps.wakeRelay = () => relay.wake()
  const reconciler = new Reconciler(
    db,
    queue,
    config,
    jobOptions,
    log,
    deps.runtime,
    (ids) => {
      relay.wake()
      internsChanged(ids)
    },
    metrics,
  )
  const safely = (what: string, work: () => Promise<unknown>) =>
    work().catch((err) => log.warn({ err: (err as Error).message }, `${what} failed; will retry`))
  /** A periodic pass that is skipped while its previous one runs (a slow host or database must not pile passes up). */
  const oneAtATime = (what: string, work: () => Promise<unknown>) => {
    let running = false
    return () => {
      if (running) return
      running = true
      void safely(what, work).finally(() => (running = false))
    }
  }
  const passes = [
    oneAtATime('reconcile', () => reconciler.run()),
    // Failover reads only the record: never held up by a host check waiting on a host that hangs.
    oneAtATime('failover', () => reconciler.vacateHosts()),
    oneAtATime('runtime check', () => reconciler.checkHosts()),
    oneAtATime('teardown check', () => reconciler.resumeTeardowns()),
  ]
  // Schedules against Redis's job schedulers (re-armed after Redis lost its data) and their missed fires.
  const scheduleSweep = oneAtATime('schedule sweep', () => sweepSchedules(deps, jobOptions))
  queueConnection.on('ready', () => {
    relay.wake()
    scheduleSweep()
    void safely('redis epoch check', () => reconciler.checkRedisEpoch(queueConnection))
  })
  const reconcileTimer = setInterval(() => passes.forEach((pass) => pass()), config.RECONCILE_INTERVAL_MS)
  const scheduleTimer = setInterval(scheduleSweep, config.SCHEDULE_SWEEP_MS)
  // Several workers may sweep at once; the deletes are idempotent, so no coordination is needed.
  const sweepTimer = setInterval(() => {
    void safely('idempotency sweep', () => reconciler.sweepIdempotencyRecords())
    void safely('console session sweep', () => pruneConsoleSessions(db))
    // Private logging's request bodies are kept for GENERATION_CONTENT_RETENTION_DAYS (the generations themselves stay).
    void safely('generation content retention', () =>
      pruneGenerationContent(db, new Date(Date.now() - config.GENERATION_CONTENT_RETENTION_DAYS * 86_400_000)),
    )
    void safely('audit retention', () => pruneAuditEvents(db, config.AUDIT_RETENTION_DAYS))
    void safely('job lease sweep', () => pruneJobLeases(db))
    void safely('generation partitions', () => keepGenerationPartitions(db, config.GENERATION_RETENTION_DAYS))
  }, 60_000)
  void safely('generation partitions', () => keepGenerationPartitions(db, config.GENERATION_RETENTION_DAYS))
  await relay.start()
  scheduleSweep()
  // The generations the API appended to Redis, written to Postgres.
  // Deliveries to observability destinations: queued as the drain writes, sent by this consumer.
  const destinationSettings = {
    attempts: config.DESTINATION_ATTEMPTS,
    backoffMs: config.DESTINATION_BACKOFF_MS,
    timeoutMs: config.DESTINATION_TIMEOUT_MS,
    concurrency: config.DESTINATION_CONCURRENCY,
    allowPrivateNetworks: config.DESTINATION_PRIVATE_NETWORKS === 'allow',
    masterKey: config.VAULT_MASTER_KEY,
  }
  const deliveriesQueue = destinationsQueue(config, log)
  const fanout = new DestinationFanout(db, deliveriesQueue.queue, destinationSettings)
  const deliveries = startDeliveries(db, config, deliveriesQueue.queue, destinationSettings, log)
  const spendCounts = metrics && spendMetrics(metrics, config.METRICS_WORKSPACES)
  const drain = new GenerationDrain(db, config, config.QUEUE_PREFIX, log, {
    onWritten: (records) => {
      spendCounts?.(records)
      // Each endpoint's uptime and time to first token, for the models page (endpoint-health.ts).
      void countEndpointHealth(queueConnection, config.QUEUE_PREFIX, records).catch((err: unknown) =>
        log.warn({ err }, 'endpoint health not counted'),
      )
    },
    beforeAck: (records) => fanout.enqueue(records),
  })
  drain.start()
  const health =
    config.HEALTH_PORT > 0
      ? await startHealthServer(config.HEALTH_PORT, config.HOST, config, {
          postgres: () => pingDatabase(db),
          redis: () => workerConnection.ping(),
        })
      : undefined

  // The queue's counts and the outbox's backlog are read when Prometheus asks, not kept up to date.
  const metricsServer = metrics
    ? await serveMetrics(metrics, config, async () => {
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed')
        for (const [state, count] of Object.entries(counts)) metrics.queueJobs.set({ state }, count)
        const outbox = await outboxBacklog(db)
        metrics.outboxRows.set(outbox.rows)
        metrics.outboxOldestAge.set(outbox.oldest ? Math.max(0, Date.now() - outbox.oldest.getTime()) / 1000 : 0)
        // The fleet, per host: its state, the interns placed on it, its free room.
        const hosts = await listHosts(db, fleetTimes(config))
        metrics.runtimeHosts.reset()
        metrics.runtimeHostInterns.reset()
        metrics.runtimeHostFree.reset()
        for (const state of ['live', 'draining', 'dead'])
          metrics.runtimeHosts.set({ state }, hosts.filter((h) => h.state === state).length)
        for (const h of hosts) {
          metrics.runtimeHostInterns.set({ host: h.id }, h.interns)
          metrics.runtimeHostFree.set({ host: h.id }, h.free)
        }
      })
    : undefined
  if (metricsServer) log.info(`worker metrics on http://${config.METRICS_HOST}:${config.METRICS_PORT}/metrics`)
  // The queue dashboard, for operators only (off unless OPERATOR_PORT is set).
  if (config.OPERATOR_PORT && !config.OPERATOR_TOKEN)
    throw new Error('OPERATOR_PORT is set without OPERATOR_TOKEN: the operator surface needs a credential')
  const operator = config.OPERATOR_PORT
    ? await startOperatorSurface(queue, {
        host: config.HOST,
        port: config.OPERATOR_PORT,
        token: config.OPERATOR_TOKEN!,
        limits: config,
      })
    : undefined
  if (operator)
    log.info(`worker operator surface (queue dashboard) on http://${config.HOST}:${config.OPERATOR_PORT}/queues`)

  return {
    deps,
    reconciler,
    relay,
    async stop() {
      metricsServer?.close()
      await operator?.close()
      health?.close()
      clearInterval(reconcileTimer)
      clearInterval(scheduleTimer)
      clearInterval(sweepTimer)
      await relay.stop()
      await drain.stop()
      await deliveries.close()
      await deliveriesQueue.queue.close()
      deliveriesQueue.connection.disconnect()
      await worker.close()
      await leases.stop()
      await queue.close()
      await Promise.allSettled([
        db.$disconnect(),
        workerConnection.quit(),
        queueConnection.quit(),
        deps.runtime.close(),
      ])
    },
  }
}
