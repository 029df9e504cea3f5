import { appendFile, mkdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createHash } from 'node:crypto'

type Item = Record<string, unknown>
/** Items of the daemon's own (type `roster.…`) live in the same file and are never sent to the model. */
const isRecord = (item: Item) => typeof item.type === 'string' && item.type.startsWith('roster.')

/**
 * Where sessions are kept off the host (the fleet's record, through the API): what a session has
 * on another host, before this one, and what it gains here, each item numbered.
 */
export interface SessionMirror {
  /** The sessions it has (asked once: what this store appends from then on is its own). */
  ids(): Promise<Set<string>>
  load(sessionId: string): Promise<Item[]>
  append(sessionId: string, from: number, items: Item[]): Promise<void>
}

/**
 * An intern's sessions, each an append-only file of conversation items (Open Responses input
 * items) beside the intern's workspace, not in it: the intern's commands cannot read or rewrite
 * their own transcript. With a mirror, every append is also kept off the host before it counts as
 * made, and a session this host has no file of is read from the mirror: a session continues on
 * whichever host its intern is placed on, with its whole history. The file is then a cache of the
 * mirror, good for one placement (the host clears it when the intern is placed anew).
 */
export class SessionStore {
  /** Each session's appends, chained: they land in the order made, whoever awaits them. */
  private readonly writes = new Map<string, Promise<void>>()
  /** Items each session has (known once it was read or appended to). */
  private readonly lengths = new Map<string, number>()
  private dirMade = false
  /** The sessions the mirror had when first asked. */
  private mirrored?: Promise<Set<string>>

  constructor(
    private readonly dir: string,
    private readonly mirror?: SessionMirror,
  ) {}

  private file(sessionId: string) {
    // Session ids come from clients: the file name is derived, never taken as a path. A long id
    // (up to 256 characters of any script) would pass the 255 bytes a file name may have: hashed.
    const encoded = Buffer.from(sessionId).toString('base64url')
    return join(
      this.dir,
      `${encoded.length <= 200 ? encoded : `h-${createHash('sha256').update(sessionId).digest('hex')}`}.jsonl`,
    )
  }

  /** The conversation: what the model is sent (Open Responses input items). */
  async load(sessionId: string): Promise<Item[]> {
    return (await this.all(sessionId)).filter((i) => !isRecord(i))
  }

  /** The daemon's own records kept with the session (the questions its runs asked). */
  async records(sessionId: string): Promise<Item[]> {
    return (await this.all(sessionId)).filter(isRecord)
  }

  async record(sessionId: string, record: Item & { type: `roster.${string}` }): Promise<void> {
    await this.append(sessionId, [record])
  }

  private async all(sessionId: string): Promise<Item[]> {
    // What is being written is read back too.
    await this.writes.get(sessionId)?.catch(() => {})
    return this.readAll(sessionId)
  }

  private async readAll(sessionId: string): Promise<Item[]> {
    let text: string
    try {
      text = await readFile(this.file(sessionId), 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
      // Not here: the session's items as the mirror keeps them (kept here from now on), if it has
      // the session at all (a new session costs no call).
      this.mirrored ??= this.mirror?.ids()
      const known = this.mirror
        ? await this.mirrored!.catch((err) => ((this.mirrored = undefined), Promise.reject(err)))
        : undefined
      const kept = this.mirror && known!.has(sessionId) ? await this.mirror.load(sessionId) : []
      if (kept.length) await this.writeLocal(sessionId, kept)
      this.lengths.set(sessionId, kept.length)
      return kept
    }
    // A line cut short by a crash mid-write is skipped; every append starts on a line of its own.
    const items: Item[] = []
    for (const line of text.split('\n')) {
      if (!line) continue
      try {
        items.push(JSON.parse(line))
      } catch {}
    }
    this.lengths.set(sessionId, items.length)
    return items
  }

  private async writeLocal(sessionId: string, items: Item[]) {
    if (!this.dirMade) await mkdir(this.dir, { recursive: true, mode: 0o700 })
    this.dirMade = true
    await appendFile(this.file(sessionId), '\n' + items.map((i) => JSON.stringify(i)).join('\n'))
  }

  /** Appends items; appends to one session land in the order they were made, awaited or not. */
  append(sessionId: string, items: Item[]): Promise<void> {
    if (!items.length) return this.writes.get(sessionId) ?? Promise.resolve()
    const write = (this.writes.get(sessionId) ?? Promise.resolve())
      .catch(() => {}) // a failed earlier write was reported to its own caller
      .then(async () => {
        const from = this.lengths.get(sessionId) ?? (await this.readAll(sessionId)).length
        await this.writeLocal(sessionId, items)
        this.lengths.set(sessionId, from + items.length)
        if (this.mirror) await this.mirror.append(sessionId, from, items)
      })
    this.writes.set(sessionId, write)
    void write.finally(() => this.writes.get(sessionId) === write && this.writes.delete(sessionId)).catch(() => {})
    return write
  }
}
