import { createHash, randomBytes } from 'node:crypto'
import type { S3Client } from '@aws-sdk/client-s3'
import { type Db } from '@roster/shared'
import { latestSnapshot, putSnapshotRow, snapshotRow, takeSnapshotGarbage } from '@roster/shared/repositories'

// Where the snapshots of interns' workspaces are kept, off the runtime hosts: the latest one per
// intern, as a gzipped tar. Postgres by default (its row holds the bytes; simple, transactional, and
// enough for workspaces of tens of megabytes: past SNAPSHOT_MAX_MB a snapshot is refused), or an
// S3-compatible object store by setting (the row holds the object's key; for large fleets and
// workspaces). Either way the row in `workspace_snapshots` says which snapshot is the latest.

export interface Snapshot {
  bytes: Buffer
  sha256: string
  generation: number
  size: number
}

export interface SnapshotStore {
  readonly kind: 'postgres' | 's3'
  /** Keeps `bytes` as the intern's latest snapshot (taken under placement `generation`). */
  put(internId: string, generation: number, bytes: Buffer): Promise<{ sha256: string; size: number }>
  /** The intern's latest snapshot, or undefined when it has none. */
  get(internId: string): Promise<Snapshot | undefined>
  /** Its digest alone (what a host compares its own copy with). */
  latest(internId: string): Promise<{ sha256: string; generation: number } | undefined>
  /** Deletes what no row points at any more (the S3 store's replaced and orphaned objects); how many. */
  sweep(): Promise<number>
  close(): void
}

const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

export class PostgresSnapshots implements SnapshotStore {
  readonly kind = 'postgres'
  constructor(private readonly db: Db) {}

  async put(internId: string, generation: number, bytes: Buffer) {
    const sha256 = digest(bytes)
    await putSnapshotRow(this.db, internId, {
      store: 'postgres',
      bytes,
      key: null,
      sha256,
      generation,
      size: bytes.length,
    })
    return { sha256, size: bytes.length }
  }

  async get(internId: string) {
    const row = await snapshotRow(this.db, internId, 'postgres')
    return row?.bytes
      ? { bytes: Buffer.from(row.bytes), sha256: row.sha256, generation: row.generation, size: row.size }
      : undefined
  }

  latest(internId: string) {
    return latestSnapshot(this.db, internId)
  }

  // The bytes live in the row: a replaced or deleted row takes them with it.
  async sweep() {
    return 0
  }

  close() {}
}

/** The S3 settings of an object store (AWS's, or any compatible one: MinIO, Ceph, R2). */
export interface S3Settings {
  bucket: string
  endpoint?: string
  region: string
  forcePathStyle: boolean
  accessKeyId?: string
  secretAccessKey?: string
}

export class S3Snapshots implements SnapshotStore {
  readonly kind = 's3'
  private client?: Promise<S3Client>

  constructor(
    private readonly db: Db,
    private readonly settings: S3Settings,
  ) {}

  /** The client, made at first use (the SDK is loaded only where the s3 store is chosen). */
  private s3() {
    this.client ??= import('@aws-sdk/client-s3').then(({ S3Client }) => {
      const { endpoint, region, forcePathStyle, accessKeyId, secretAccessKey } = this.settings
      return new S3Client({
        endpoint,
        region,
        forcePathStyle,
        credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
      })
    })
    return this.client
  }

  async put(internId: string, generation: number, bytes: Buffer) {
    const sha256 = digest(bytes)
    // A key of its own, never written twice: the row points at it once it is whole, and the object it
    // replaces becomes garbage (a trigger records it) that sweep() deletes; nothing else ever deletes
    // an object, so no sweep can remove one a row is about to point at.
    const key = `snapshots/${internId}/${sha256.slice(0, 16)}-${randomBytes(8).toString('hex')}.tar.gz`
    const { PutObjectCommand } = await import('@aws-sdk/client-s3')
    await (
      await this.s3()
    ).send(
      new PutObjectCommand({ Bucket: this.settings.bucket, Key: key, Body: bytes, ContentType: 'application/gzip' }),
    )
    await putSnapshotRow(this.db, internId, { store: 's3', bytes: null, key, sha256, generation, size: bytes.length })
    return { sha256, size: bytes.length }
  }

  async get(internId: string) {
    const row = await snapshotRow(this.db, internId, 's3')
    if (!row?.key) return undefined
    const { GetObjectCommand } = await import('@aws-sdk/client-s3')
    const out = await (await this.s3()).send(new GetObjectCommand({ Bucket: this.settings.bucket, Key: row.key }))
    const bytes = Buffer.from(await out.Body!.transformToByteArray())
    return { bytes, sha256: row.sha256, generation: row.generation, size: row.size }
  }

  latest(internId: string) {
    return latestSnapshot(this.db, internId)
  }

  /**
   * Deletes a batch of garbage objects from the bucket, then their rows, in one transaction: an
   * object whose deletion failed keeps its row (tried again next time), and two API processes
   * sweeping at once take different rows.
   */
  async sweep(batch = 500) {
    const { DeleteObjectsCommand } = await import('@aws-sdk/client-s3')
    const s3 = await this.s3()
    return this.db.$transaction(
      async (tx) => {
        const keys = await takeSnapshotGarbage(tx, batch)
        if (keys.length === 0) return 0
        const out = await s3.send(
          new DeleteObjectsCommand({
            Bucket: this.settings.bucket,
            Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true },
          }),
        )
        // A key that is already gone counts as deleted; any other error keeps every row of the batch.
        const failed = (out.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey')
        if (failed.length)
          throw new Error(
            `the snapshot store refused to delete ${failed.length} objects: ${failed[0]!.Code} ${failed[0]!.Message ?? ''}`,
          )
        return keys.length
      },
      { timeout: 60_000 },
    )
  }

  close() {
    void this.client?.then((c) => c.destroy())
  }
}

/** Sweeps the store's garbage every `everyMs` (and once at start), logging what it could not do. */
export function sweepPeriodically(
  store: SnapshotStore,
  everyMs: number,
  log: { warn(obj: object, msg: string): void },
) {
  let running = false
  const sweep = async () => {
    if (running) return
    running = true
    try {
      while ((await store.sweep()) > 0);
    } catch (err) {
      log.warn({ err }, 'old workspace snapshots could not be deleted from the snapshot store; trying again later')
    } finally {
      running = false
    }
  }
  void sweep()
  const timer = setInterval(sweep, everyMs)
  timer.unref()
  return () => clearInterval(timer)
}
