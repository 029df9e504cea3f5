import { describe, expect, it } from 'vitest'
import { mkdtempSync, writeFileSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { buildRuntimeHost } from './host.js'

const config = (dir: string) => ({ HOST: '127.0.0.1', PORT: 0, RUNTIME_DATA_DIR: dir, LOG_LEVEL: 'silent' as const })

describe('the runtime host', () => {
  it('boots past a torn configuration file (a crash mid-write) and keeps the readable ones', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runtime-'))
    const good = randomUUID()
    writeFileSync(join(dir, `${good}.json`), JSON.stringify({ hostname: 'good.interns.test', name: 'good', instructions: null, model: null, token: 't' }))
    writeFileSync(join(dir, `${randomUUID()}.json`), '{"hostname":"torn.inte')
    const sut = await buildRuntimeHost(config(dir), { logger: false })
    await sut.ready()
    try {
      const hosted = (await sut.inject({ method: 'GET', url: '/v1/interns' })).json().data
      expect(hosted.map((h: { id: string }) => h.id)).toEqual([good])
    } finally {
      await sut.close()
    }
  })

  it('writes configurations whole: no temporary file is left beside them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runtime-'))
    const sut = await buildRuntimeHost(config(dir), { logger: false })
    try {
      const id = randomUUID()
      const res = await sut.inject({
        method: 'PUT',
        url: `/v1/interns/${id}`,
        payload: { hostname: 'w.interns.test', name: 'w', instructions: null, model: null, token: 't' },
      })
      expect(res.json()).toEqual({ written: true })
      expect(readdirSync(dir)).toEqual([`${id}.json`])
    } finally {
      await sut.close()
    }
  })
})
