import { createHash } from 'node:crypto'
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import {
  hostError,
  WORKSPACE_FILE_MAX_BYTES,
  type HostErrorBody,
  type InternSpec,
  type Placement,
  type RuntimeConfig,
} from '@roster/protocol'
import type { FastifyBaseLogger } from 'fastify'
import { SessionStore } from './agent/session-store.js'
import { runAgentTurn } from './agent/agent-turn.js'
import { InternDaemon } from './agent/daemon.js'
import type { FleetClient } from './fleet-client.js'
import type { EgressProxies } from './egress-proxy.js'
import type { CommandRunner } from './sandbox.js'
import { ownWorkspace } from './confinement.js'
import { restoreSnapshot, SnapshotTooLarge, takeSnapshot, workspaceFingerprint } from './workspace-snapshots.js'
import { writeWorkspaceFile } from './workspace-files.js'

// The interns one runtime host runs, as it holds them: each under the placement the fleet's record
// gave it (the generation), with its daemon (its runs and sessions), its workspace and its egress
// proxy. Nothing here outlives the process but the workspace and session caches on disk, which a
// new placement replaces from the record (sessions) and the latest snapshot (the workspace).

export interface HostedIntern {
  id: string
  spec: InternSpec
  digest: string
  running: boolean
  startedAt: string | null
  /** Work counters: how often the configuration was really written and the intern really started. */
  configWrites: number
  starts: number
  /** When it was configured (a heartbeat's answer older than that may not know of it yet). */
  configuredAt: number
  /** Stopped because this host lost touch with the fleet's record: resumed when it is confirmed. */
  heldByLease: boolean
  /** Its daemon's runs and sessions: made at its first chat, ended when it stops. */
  daemon?: InternDaemon
  /** The workspace's fingerprint at its last snapshot (or restore). */
  snapshotOf?: string
  /** Snapshots one at a time. */
  snapshotting?: Promise<void>
}

/** A refusal the routes answer with (the protocol's host error codes). */
export class Refused extends Error {
  constructor(
    readonly status: number,
    readonly body: HostErrorBody,
  ) {
    super(body.message)
  }
}
const refused = (...args: Parameters<typeof hostError>) => {
  const { status, body } = hostError(...args)
  return new Refused(status, body)
}

export interface InternsDeps {
  config: RuntimeConfig
  log: FastifyBaseLogger
  fleet: FleetClient
  commands: { run: CommandRunner; mode: 'sandboxed' | 'unconfined' | 'refused' }
  proxies: EgressProxies
  user?: { uid: number; gid: number; setpriv: string }
}

/** What an empty workspace's fingerprint is (a new intern's, or one with no snapshot): nothing to snapshot. */
const EMPTY_WORKSPACE = createHash('sha256').digest('hex')

export class Interns {
  private readonly all = new Map<string, HostedIntern>()
  private readonly byHostname = new Map<string, string>()
  /** Draining: no new turns; set once, until the process ends. */
  draining = false
  /** The directory of every intern's, made once. */
  private internsDir?: Promise<void>

  constructor(private readonly deps: InternsDeps) {}

  get(id: string) {
    return this.all.get(id)
  }

  byHost(hostname: string) {
    const id = this.byHostname.get(hostname)
    return id === undefined ? undefined : this.all.get(id)
  }

  list() {
    return [...this.all.values()]
  }

  private dir(id: string) {
    return join(this.deps.config.RUNTIME_DATA_DIR, 'interns', id)
  }

  /**
   * Configures an intern under a placement. The same placement again: written again only if its
   * configuration changed. A new placement (a later generation): whatever this host held of the
   * intern is dropped, and its workspace is restored from its latest snapshot before it runs. An
   * older one: refused (the record has moved on).
   */
  async configure(id: string, spec: InternSpec): Promise<{ written: boolean }> {
    const current = this.all.get(id)
    if (current && current.spec.generation > spec.generation)
      throw refused(
        'placement_stale',
        `intern ${id} runs here under generation ${current.spec.generation}, not ${spec.generation}`,
      )
    const owner = this.byHostname.get(spec.hostname)
    if (owner && owner !== id) throw refused('bad_request', 'that hostname belongs to another intern')
    const digest = createHash('sha256').update(JSON.stringify(spec)).digest('hex')
    if (current?.digest === digest) return { written: false }
    const placedAnew = !current || current.spec.generation !== spec.generation
    let restored: string | undefined
    if (placedAnew) {
      if (current) await this.drop(current, 'the intern was placed again; its run was cancelled')
      this.deps.fleet.generations.set(id, spec.generation)
      restored = await this.restore(id, spec.snapshot !== null)
    } else if (current.spec.hostname !== spec.hostname) this.byHostname.delete(current.spec.hostname)
    this.byHostname.set(spec.hostname, id)
    this.all.set(id, {
      id,
      spec,
      digest,
      running: placedAnew ? false : current!.running,
      startedAt: placedAnew ? null : current!.startedAt,
      configWrites: (current?.configWrites ?? 0) + 1,
      starts: current?.starts ?? 0,
      configuredAt: Date.now(),
      heldByLease: false,
      daemon: placedAnew ? undefined : current!.daemon,
      snapshotOf: placedAnew ? restored : current!.snapshotOf,
    })
    return { written: true }
  }

  /** Its local state made anew: sessions to be read from the record, the workspace from its latest snapshot. */
  private async restore(id: string, hasSnapshot: boolean): Promise<string> {
    const dir = this.dir(id)
    await rm(dir, { recursive: true, force: true })
    // Passable, not listable, on the way to the workspace: the sandbox user mounts it from there.
    this.internsDir ??= mkdir(join(this.deps.config.RUNTIME_DATA_DIR, 'interns'), {
      recursive: true,
      mode: 0o711,
    }).then(() => {})
    await this.internsDir
    await mkdir(dir, { mode: 0o711 })
    const workspace = join(dir, 'workspace')
    await mkdir(workspace, { recursive: true })
    await ownWorkspace(workspace, this.deps.user)
    // A new intern has none: no call for it.
    const snapshot = hasSnapshot ? await this.deps.fleet.getSnapshot(id) : undefined
    if (!snapshot) return EMPTY_WORKSPACE
    if (this.deps.commands.mode === 'refused') {
      this.deps.log.warn(
        { intern: id },
        'a workspace snapshot cannot be restored on this host: it cannot run commands (no bubblewrap)',
      )
      return EMPTY_WORKSPACE
    }
    await restoreSnapshot(this.deps.commands.run, workspace, snapshot)
    return workspaceFingerprint(workspace)
  }

  /** Puts a file into the intern's workspace, as its own file tools write (in its sandbox). */
  putFile(intern: HostedIntern, path: string, bytes: Uint8Array) {
    return writeWorkspaceFile(join(this.dir(intern.id), 'workspace'), path, bytes, {
      timeoutMs: 30_000,
      maxBytes: WORKSPACE_FILE_MAX_BYTES,
    })
  }

  /** Checks that a call names the placement the intern runs under here. */
  check(id: string, generation: number | undefined): HostedIntern {
    const intern = this.all.get(id)
    if (!intern) throw refused('not_found', `intern ${id} is not configured on this host`)
    if (generation !== undefined && generation !== intern.spec.generation)
      throw refused(
        'placement_stale',
        `intern ${id} runs here under generation ${intern.spec.generation}, not ${generation}`,
      )
    return intern
  }

  start(intern: HostedIntern): { started: boolean } {
    if (intern.running) return { started: false }
    intern.running = true
    intern.heldByLease = false
    intern.startedAt = new Date().toISOString()
    intern.starts += 1
    return { started: true }
  }

  /** Suspended: its runs cancelled (a client listening is told), its proxy closed, its workspace snapshotted. */
  async stop(intern: HostedIntern, why: string, options: { strict?: boolean } = {}) {
    intern.running = false
    const daemon = intern.daemon
    intern.daemon = undefined
    await daemon?.stop(why)
    await this.deps.proxies.close(intern.id)
    await this.snapshot(intern, options)
  }

  /**
   * Before a teardown: the intern stops and its workspace is snapshotted one last time, and that
   * snapshot must be kept (a failure fails the teardown, which says the workspace could not be
   * archived). The archive itself is written with the record, off this host.
   */
  async archive(intern: HostedIntern) {
    await this.stop(intern, 'the intern is being deleted', { strict: true })
    return { archived: true }
  }

  /** Gone from this host: its runs ended, its local state removed (it lives on in the record). */
  async drop(intern: HostedIntern, why: string) {
    this.all.delete(intern.id)
    this.byHostname.delete(intern.spec.hostname)
    this.deps.fleet.generations.delete(intern.id)
    intern.running = false
    await intern.daemon?.stop(why)
    intern.daemon = undefined
    await this.deps.proxies.close(intern.id)
    await rm(this.dir(intern.id), { recursive: true, force: true })
  }

  /**
   * The record's word on what this host runs (a heartbeat's answer, asked at `asked`): an intern it
   * no longer places here, or places under another generation, is dropped (unless it was configured
   * after the question was asked); one held while this host was out of touch runs again.
   */
  async applyPlacements(placements: Placement[], asked: number) {
    const placed = new Map(placements.map((p) => [p.id, p.generation]))
    for (const intern of this.list()) {
      const generation = placed.get(intern.id)
      if (generation === intern.spec.generation) {
        if (intern.heldByLease) {
          intern.heldByLease = false
          intern.running = true
        }
        continue
      }
      if (intern.configuredAt >= asked) continue
      this.deps.log.warn(
        { intern: intern.id, generation: intern.spec.generation, record: generation ?? null },
        'the fleet no longer places this intern here: stopping it',
      )
      await this.drop(
        intern,
        'the intern was moved to another runtime host; its run was cancelled (the session is kept: continue it)',
      )
    }
  }

  /** This host lost touch with the record: every intern stops running here until it is confirmed. */
  async hold(why: string) {
    for (const intern of this.list()) {
      if (!intern.running) continue
      intern.running = false
      intern.heldByLease = true
      const daemon = intern.daemon
      intern.daemon = undefined
      await daemon?.stop(why)
      await this.deps.proxies.close(intern.id)
    }
  }

  /** Draining: no new turns; the going ones may finish within `graceMs`, then every intern is stopped and snapshotted. */
  async drain(graceMs: number) {
    this.draining = true
    const ended = Promise.all(this.list().map((i) => i.daemon?.turnsEnded()))
    await Promise.race([ended, new Promise((r) => setTimeout(r, graceMs).unref())])
    for (const intern of this.list()) {
      if (intern.running || intern.daemon)
        await this.stop(
          intern,
          "the intern's host is draining; its run was cancelled (the session is kept: continue it)",
        ).catch((err) => this.deps.log.warn({ err, intern: intern.id }, 'draining an intern failed'))
      else await this.snapshot(intern).catch(() => {})
    }
  }

  /** The workspace kept off the host, if it changed since it last was (one snapshot at a time per intern). */
  snapshot(intern: HostedIntern, { strict = false }: { strict?: boolean } = {}): Promise<void> {
    const take = async () => {
      if (this.deps.commands.mode === 'refused') return
      const workspace = join(this.dir(intern.id), 'workspace')
      const fingerprint = await workspaceFingerprint(workspace)
      if (fingerprint === intern.snapshotOf) return
      try {
        const bytes = await takeSnapshot(
          this.deps.commands.run,
          workspace,
          this.deps.config.RUNTIME_SNAPSHOT_MAX_MB * 1024 * 1024,
        )
        await this.deps.fleet.putSnapshot(intern.id, bytes)
        intern.snapshotOf = fingerprint
      } catch (err) {
        const level = err instanceof SnapshotTooLarge ? 'warn' : 'error'
        this.deps.log[level]({ err, intern: intern.id }, 'the workspace snapshot was not kept')
        if (strict) throw err
      }
    }
    const next = (intern.snapshotting ?? Promise.resolve()).then(take, take)
    intern.snapshotting = next
    return next
  }

  /** An intern's daemon: its sessions kept with the record, its turns run in its sandbox, its workspace snapshotted after each. */
  daemonOf(intern: HostedIntern): InternDaemon {
    if (intern.daemon) return intern.daemon
    const { config, fleet, commands, proxies } = this.deps
    const sessions = new SessionStore(join(this.dir(intern.id), 'sessions'), {
      ids: () => fleet.sessionIds(intern.id),
      load: (sessionId) => fleet.loadSession(intern.id, sessionId),
      append: (sessionId, from, items) => fleet.appendSession(intern.id, sessionId, from, items),
    })
    const workspace = join(this.dir(intern.id), 'workspace')
    // The configuration as it is now (a PATCH may have changed the model or instructions since).
    const spec = () => (this.all.get(intern.id) ?? intern).spec
    const model = () => spec().model ?? config.INTERN_DEFAULT_MODEL
    return (intern.daemon = new InternDaemon({
      sessions,
      deadlineMs: config.INTERACTION_DEADLINE_MS,
      maxPaused: config.RUN_MAX_PAUSED,
      model,
      onError: (err, sessionId) =>
        this.deps.log.warn({ err, intern: intern.id, session: sessionId }, 'an intern turn failed'),
      execute: async (run) => {
        const { token, instructions } = spec()
        try {
          return await runAgentTurn(
            {
              apiBase: config.ROSTER_API_URL,
              apiKey: token,
              model: model(),
              instructions,
              workspace,
              runCommand: async (command, { network, ...limits }, signal) =>
                commands.run(
                  command,
                  { ...limits, workspace, egressSocket: network ? await proxies.socketFor(intern.id) : undefined },
                  signal,
                ),
              sessions,
              maxSteps: config.RUN_MAX_STEPS,
              commandTimeoutMs: config.COMMAND_TIMEOUT_MS,
              steered: run.steered,
              onRetry: (err, waitMs, attempt) =>
                this.deps.log.warn(
                  { intern: intern.id, session: run.sessionId, status: err.status, waitMs, attempt },
                  `an intern's model call was refused (${err.message}); making it again`,
                ),
              // Secrets are released by the API's egress, for the intern placed here and no other.
              http: (args, signal) => fleet.send(intern.id, args, signal),
              approval: run.approval,
              commandNetwork: commands.mode !== 'refused',
              ask: run.ask,
            },
            run.sessionId,
            run.prompt,
            run.emit,
            run.signal,
          )
        } finally {
          // Whatever the turn changed in the workspace is kept off the host before the turn is
          // said to be done: a host that dies after it loses nothing of it.
          await this.snapshot(intern)
        }
      },
    }))
  }
}
