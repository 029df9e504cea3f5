import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3'
import S3rver from 's3rver'
import { freePort, useTestTenant } from '@roster/testing'
import { PostgresSnapshots, S3Snapshots, type SnapshotStore } from './snapshots.js'

// Both snapshot stores against real Postgres, the S3 one against s3rver (an S3-compatible server
// on the loopback): the latest snapshot per intern comes back byte for byte, and the S3 store
// leaves no object behind that no row points at, once swept.
const env = useTestTenant()
const bucket = 'roster-snapshots'
let s3rver: S3rver
let endpoint = ''

beforeAll(async () => {
  const port = await freePort()
  s3rver = new S3rver({
    port,
    address: '127.0.0.1',
    silent: true,
    directory: mkdtempSync(join(tmpdir(), 'roster-s3-')),
    configureBuckets: [{ name: bucket, configs: [] }],
  })
  await s3rver.run()
  endpoint = `http://127.0.0.1:${port}`
})
afterAll(async () => {
  await s3rver?.close()
})

const s3Settings = () => ({
  bucket,
  endpoint,
  region: 'us-east-1',
  forcePathStyle: true,
  accessKeyId: 'S3RVER',
  secretAccessKey: 'S3RVER',
})
const objects = async () => {
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  })
  const out = await client.send(new ListObjectsV2Command({ Bucket: bucket }))
  client.destroy()
  return (out.Contents ?? []).map((o) => o.Key!).sort()
}
const newIntern = async (name: string) =>
  (await env.t.db.intern.create({ data: { workspaceId: env.tenant.workspaceId, name, status: 'running' } })).id

describe.each([
  ['postgres', () => new PostgresSnapshots(env.t.db)],
  ['s3', () => new S3Snapshots(env.t.db, s3Settings())],
] as [string, () => SnapshotStore][])('the %s snapshot store', (kind, make) => {
  it('gives back the latest snapshot byte for byte, with its digest and generation, and nothing for an intern without one', async () => {
    const store = make()
    const id = await newIntern(`snap-${kind}-1`)
    expect(await store.get(id)).toBeUndefined()
    expect(await store.latest(id)).toBeUndefined()
    const first = randomBytes(300_000)
    const second = randomBytes(1_000)
    await store.put(id, 1, first)
    const kept = await store.put(id, 2, second)
    expect(kept.size).toBe(1_000)
    const got = await store.get(id)
    expect(got!.bytes.equals(second)).toBe(true)
    expect(got).toMatchObject({ generation: 2, size: 1_000, sha256: kept.sha256 })
    expect(await store.latest(id)).toEqual({ sha256: kept.sha256, generation: 2 })
    store.close()
  })
})

describe('the s3 snapshot store', () => {
  it('deletes replaced objects and those of deleted interns when swept, and never the latest', async () => {
    const store = new S3Snapshots(env.t.db, s3Settings())
    await store.sweep() // what earlier tests left
    const kept = await newIntern('kept')
    const gone = await newIntern('gone')
    for (let i = 0; i < 3; i++) await store.put(kept, i, Buffer.from(`kept ${i}`))
    await store.put(gone, 1, Buffer.from('gone'))
    expect((await objects()).filter((k) => k.includes(kept))).toHaveLength(3)
    await env.t.db.intern.delete({ where: { id: gone } })
    // The same bytes again get a key of their own (a sweep can never take a key a row is about to point at).
    await store.put(kept, 3, Buffer.from('kept 2'))
    expect(await store.sweep()).toBe(4)
    const left = await objects()
    expect(left.filter((k) => k.includes(gone))).toEqual([])
    expect(left.filter((k) => k.includes(kept))).toHaveLength(1)
    expect((await store.get(kept))!.bytes.toString()).toBe('kept 2')
    expect(await store.sweep()).toBe(0)
    store.close()
  })

  it('keeps the row it had when the object store cannot be reached, and sweeps again later what it could not delete', async () => {
    const id = await newIntern('unreachable')
    const store = new S3Snapshots(env.t.db, s3Settings())
    await store.put(id, 1, Buffer.from('before'))
    const down = new S3Snapshots(env.t.db, { ...s3Settings(), endpoint: `http://127.0.0.1:${await freePort()}` })
    await expect(down.put(id, 2, Buffer.from('after'))).rejects.toThrow()
    expect((await store.get(id))!.bytes.toString()).toBe('before')
    await store.put(id, 3, Buffer.from('replaced'))
    await expect(down.sweep()).rejects.toThrow()
    const [{ n }] = await env.t.db.$queryRaw<[{ n: number }]>`SELECT count(*)::int AS n FROM snapshot_garbage`
    expect(n).toBeGreaterThan(0)
    expect(await store.sweep()).toBeGreaterThan(0)
    expect((await store.get(id))!.bytes.toString()).toBe('replaced')
    down.close()
    store.close()
  })
})
