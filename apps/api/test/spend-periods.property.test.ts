import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { spendPeriods } from '@roster/shared'
import { insertGenerations } from '@roster/shared/repositories'
import { generationRecord, makeUserKey, useTestTenant } from '@roster/testing'

// The periods a key's spend is counted in, worked out twice: by Postgres as generations are
// written (date_trunc in key_spend's statement) and by the API when it reads a key's usage or
// checks its limit (spendPeriods). They must agree on every instant: across UTC midnight, Mondays,
// month ends and leap days, or a key's usage would read from a period nothing was written to.
const env = useTestTenant()

const record = (id: string, keyId: string, at: Date, pico: bigint) =>
  generationRecord({ id, key_id: keyId, created_at: at.toISOString(), cost_pico: pico.toString() })

// Instants near the boundaries that matter, and anywhere in 2024–2030 (2024 and 2028 are leap years).
const boundary = fc
  .tuple(
    fc.constantFrom(
      '2024-02-28T23:59:59.999Z',
      '2024-02-29T00:00:00.000Z',
      '2024-02-29T23:59:59.999Z',
      '2024-03-01T00:00:00.000Z',
      '2026-11-29T23:59:59.999Z', // a Sunday's last instant
      '2026-11-30T00:00:00.000Z', // the Monday after
      '2026-12-31T23:59:59.999Z',
      '2027-01-01T00:00:00.000Z',
      '2028-02-29T12:00:00.000Z',
    ),
    fc.integer({ min: -2, max: 2 }),
  )
  .map(([at, ms]) => new Date(Date.parse(at) + ms))
const anywhere = fc.date({
  min: new Date('2024-01-01T00:00:00Z'),
  max: new Date('2030-12-31T23:59:59Z'),
  noInvalidDate: true,
})

describe('spend periods', () => {
  it('are the same in Postgres and in the API for every instant, and a key’s spend in each is exactly what was written', async () => {
    let n = 0
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(boundary, anywhere), { minLength: 1, maxLength: 6 }), async (instants) => {
        const { userId: _member, key: _key } = await makeUserKey(env.t.db, env.tenant.workspaceId)
        const keyRow = await env.t.db.apiKey.findFirstOrThrow({ where: { userId: _member } })
        const records = instants.map((at, i) => record(`g-${n}-${i}`, keyRow.id, at, BigInt(i + 1) * 1_000_003n))
        n++
        await insertGenerations(env.t.db, records)
        // Written again (a retried batch): nothing counts twice.
        await insertGenerations(env.t.db, records)
        const expected = new Map<string, bigint>()
        for (const r of records)
          for (const period of Object.values(spendPeriods(new Date(r.created_at))))
            expected.set(period, (expected.get(period) ?? 0n) + BigInt(r.cost_pico))
        const rows = await env.t.db.spend.findMany({ where: { ownerId: keyRow.id } })
        const got = new Map(rows.map((r) => [r.period, BigInt(r.creditsPico.toFixed(0))]))
        expect(got).toEqual(expected)
      }),
      { numRuns: 60 },
    )
  })

  it('names a day, its Monday and its month in UTC', () => {
    expect(spendPeriods(new Date('2026-11-29T23:59:59.999Z'))).toEqual({
      all: 'all',
      day: 'd2026-11-29',
      week: 'w2026-11-23',
      month: 'm2026-11',
    })
    expect(spendPeriods(new Date('2026-11-30T00:00:00.000Z')).week).toBe('w2026-11-30')
    expect(spendPeriods(new Date('2024-02-29T10:00:00Z'))).toMatchObject({
      day: 'd2024-02-29',
      week: 'w2024-02-26',
      month: 'm2024-02',
    })
    // A week across a year's end belongs to its Monday.
    expect(spendPeriods(new Date('2027-01-01T00:00:00Z')).week).toBe('w2026-12-28')
  })
})
