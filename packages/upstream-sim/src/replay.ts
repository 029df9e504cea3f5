import { readFileSync } from 'node:fs'
import type { ServerResponse } from 'node:http'

// Recorded provider traffic (packages/upstream-sim/recordings, each with its line in SOURCES),
// replayed as a model: a request for the model `replay/<file>` is answered with that recording,
// exactly as it was sent, its bytes cut at arbitrary places (a seeded pseudo-random cut, so a
// failure can be replayed), as a real connection delivers them.

import type { Protocol } from '@roster/gateway'
import { SIM_PROTOCOLS } from './protocols/index.js'

export interface Recording {
  file: string
  protocol: Protocol
  provider: string
  status: number
  source: string
  /** A stream (`.chunks`, `.sse`) or a whole reply (`.json`). */
  stream: boolean
}

export const RECORDINGS_DIR = new URL('../recordings/', import.meta.url)

let loaded: Map<string, Recording> | undefined

/** The recordings SOURCES lists (read once, when first asked for). */
export function recordings(): Map<string, Recording> {
  if (loaded) return loaded
  loaded = new Map()
  const text = readFileSync(new URL('SOURCES', RECORDINGS_DIR), 'utf8')
  for (const line of text.split('\n')) {
    if (!line.trim() || line.startsWith('#')) continue
    const [file, protocol, provider, status, source] = line.trim().split(/\s+/)
    if (!file || !source || !(protocol! in SIM_PROTOCOLS))
      throw new Error(`SOURCES: cannot read the line ${JSON.stringify(line)}`)
    loaded.set(file, {
      file,
      protocol: protocol as Protocol,
      provider: provider!,
      status: Number(status),
      source,
      stream: !file.endsWith('.json'),
    })
  }
  return loaded
}

/** The model name that replays a recording. */
export const replayModel = (file: string) => `replay/${file}`

/**
 * The bytes of a recording as they go on the wire. A `.chunks` file holds each event's data, one
 * JSON a line, as its source recorded them: framed here as the protocol frames them (`event:` named
 * after the data's type for Anthropic and OpenAI Responses; data only, then `[DONE]`, for Chat
 * Completions). `.sse` and `.json` files are the bytes as sent.
 */
export function recordingBytes(r: Recording): Buffer {
  const raw = readFileSync(new URL(r.file, RECORDINGS_DIR))
  if (!r.file.endsWith('.chunks')) return raw
  const lines = raw
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim())
  return Buffer.from(SIM_PROTOCOLS[r.protocol].frame(lines))
}

/** A small seeded generator (mulberry32): the same seed cuts a recording the same way. */
function random(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Cuts bytes into pieces of 1 to `max` bytes, anywhere (inside a UTF-8 character, a JSON string, a line). */
export function cutPieces(bytes: Buffer, seed: number, max = 48): Buffer[] {
  const next = random(seed)
  const out: Buffer[] = []
  for (let at = 0; at < bytes.length;) {
    const size = 1 + Math.floor(next() * max)
    out.push(bytes.subarray(at, at + size))
    at += size
  }
  return out
}

/**
 * Answers a request for `replay/<file>` on `path`: the recording, with its status, in pieces
 * (each written on its own turn of the event loop, so they leave as separate chunks). A recording
 * of another protocol, or of the other mode (a stream asked for whole), is a 400 naming it.
 */
export async function replay(
  res: ServerResponse,
  path: string,
  model: string,
  stream: boolean,
  seed: number,
): Promise<void> {
  const file = model.slice('replay/'.length)
  const r = recordings().get(file)
  const refuse = (message: string) => {
    const body = JSON.stringify({ error: { type: 'invalid_request_error', message } })
    res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    res.end(body)
  }
  if (!r) return refuse(`no recording ${file} (see recordings/SOURCES)`)
  if (SIM_PROTOCOLS[r.protocol].path !== path)
    return refuse(`${file} is a ${r.protocol} recording, asked for on ${path}`)
  if (r.stream !== stream && r.status === 200)
    return refuse(`${file} is a ${r.stream ? 'stream' : 'whole reply'}; ask for it ${r.stream ? 'streamed' : 'whole'}`)
  return sendCut(res, recordingBytes(r), r.status, r.stream && r.status === 200, seed)
}

/** A reply's bytes as sent, in pieces cut anywhere (each written on its own turn of the event loop). */
export async function sendCut(
  res: ServerResponse,
  bytes: Buffer,
  status: number,
  streamed: boolean,
  seed: number,
): Promise<void> {
  res.writeHead(status, {
    'content-type': streamed ? 'text/event-stream; charset=utf-8' : 'application/json',
    ...(streamed ? { 'cache-control': 'no-cache' } : { 'content-length': bytes.length }),
  })
  for (const piece of cutPieces(bytes, seed)) {
    if (res.destroyed) return
    res.write(piece)
    await new Promise((resolve) => setImmediate(resolve))
  }
  res.end()
}
