import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cutPieces, recordingBytes, recordings } from './replay.js'
import { startSimulator, type Simulator } from './server.js'

let sim: Simulator
beforeAll(async () => {
  sim = await startSimulator({ cutSeed: 7 })
})
afterAll(async () => sim?.close())

/** A request whose reply is read chunk by chunk as it arrives (the bytes, and how many reads). */
function ask(path: string, body: object): Promise<{ status: number; bytes: Buffer; reads: number }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${sim.url}${path}`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode!, bytes: Buffer.concat(chunks), reads: chunks.length }))
      },
    )
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}

describe('replaying recorded provider traffic', () => {
  it('reads every recording SOURCES lists, each with a source, a protocol and a status', () => {
    const all = [...recordings().values()]
    expect(all.length).toBeGreaterThanOrEqual(40)
    for (const r of all) {
      expect(recordingBytes(r).length, r.file).toBeGreaterThan(0)
      expect([200, 400, 429], r.file).toContain(r.status)
    }
  })

  it('cuts anywhere, and the pieces are the bytes', () => {
    const bytes = Buffer.from('{"text":"naïve — 東京 🙂"}')
    for (let seed = 1; seed < 50; seed++) {
      const pieces = cutPieces(bytes, seed, 4)
      expect(Buffer.concat(pieces).equals(bytes)).toBe(true)
      expect(pieces.every((p) => p.length >= 1 && p.length <= 4)).toBe(true)
    }
    // Some cut falls inside a multi-byte character.
    const cutsInside = [...Array(50).keys()].some((seed) =>
      cutPieces(bytes, seed + 1, 4).some((p) => p.toString('utf8').includes('\uFFFD')),
    )
    expect(cutsInside).toBe(true)
  })

  it('answers a recording as it was sent, in many pieces: a stream framed as its protocol frames it', async () => {
    const r = recordings().get('anthropic-text.chunks')!
    const res = await ask('/v1/messages', { model: 'replay/anthropic-text.chunks', stream: true })
    expect(res.status).toBe(200)
    expect(res.bytes.equals(recordingBytes(r))).toBe(true)
    expect(res.bytes.toString()).toMatch(/^event: message_start\ndata: \{"type":"message_start"/)
    expect(res.reads).toBeGreaterThan(5)
    const chat = await ask('/v1/chat/completions', { model: 'replay/groq-tool-call.chunks', stream: true })
    expect(chat.bytes.toString()).toMatch(/\n\ndata: \[DONE\]\n\n$/)
  })

  it('answers an error recording with its status, and refuses a recording asked for on another protocol or mode', async () => {
    const quota = await ask('/v1/responses', { model: 'replay/openai-insufficient-quota.json' })
    expect(quota.status).toBe(429)
    expect(JSON.parse(quota.bytes.toString()).error.code).toBe('insufficient_quota')
    const wrong = await ask('/v1/chat/completions', { model: 'replay/anthropic-text.chunks', stream: true })
    expect([wrong.status, wrong.bytes.toString()]).toEqual([
      400,
      expect.stringContaining('anthropic-messages recording'),
    ])
    const mode = await ask('/v1/messages', { model: 'replay/anthropic-text.chunks' })
    expect([mode.status, mode.bytes.toString()]).toEqual([400, expect.stringContaining('ask for it streamed')])
    const none = await ask('/v1/messages', { model: 'replay/no-such.json' })
    expect(none.status).toBe(400)
  })
})
