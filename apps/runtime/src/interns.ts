import { createHash } from 'node:crypto'
import type { InternSpec, Placement } from '@roster/protocol'
import type { InternDaemon } from './agent/daemon.js'
import type { InternsDeps } from './interns-deps.js'
import { refused, type HostedIntern } from './hosted-intern.js'
import { InternWorkspaces } from './intern-workspaces.js'
import { makeDaemon } from './intern-daemon.js'

export { Refused, type HostedIntern } from './hosted-intern.js'
export type { InternsDeps } from './interns-deps.js'

// The interns one runtime host runs, as it holds them: each under the placement the fleet's record
// gave it (the generation), with its daemon (its runs and sessions), its workspace and its egress
// proxy. Nothing here outlives the process but the workspace and session caches on disk, which a
// new placement replaces from the record (sessions) and the latest snapshot (the workspace).

export class Interns {
  private readonly all = new Map<string, HostedIntern>()
  private readonly byHostname = new Map<string, string>()
  /** Draining: no new turns; set once, until the process ends. */
  draining = false
  /** Their workspaces and session caches on this host, restored and snapshotted. */
  readonly workspaces: InternWorkspaces

  constructor(private readonly deps: InternsDeps) {
    this.workspaces = new InternWorkspaces(deps)
  }

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
      restored = await this.workspaces.restore(id, spec.snapshot !== null)
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
    await this.workspaces.snapshot(intern, options)
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
    await this.workspaces.remove(intern.id)
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
      else await this.workspaces.snapshot(intern).catch(() => {})
    }
  }

  /** An intern's daemon: its sessions kept with the record, its turns run in its sandbox, its workspace snapshotted after each. */
  daemonOf(intern: HostedIntern): InternDaemon {
    // The configuration as it is now (a PATCH may have changed the model or instructions since).
    intern.daemon ??= makeDaemon(this.deps, intern, () => (this.all.get(intern.id) ?? intern).spec, this.workspaces)
    return intern.daemon
  }
}
