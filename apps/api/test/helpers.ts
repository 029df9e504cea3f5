import type { FastifyInstance } from 'fastify'
import type { OpenRouter } from '@openrouter/sdk'
import type { InternChatCompletionChunk, InternChatCompletionRequest } from '@openrouter/sdk/models'
import { afterAll, beforeAll } from 'vitest'
import { startSimulator, type Simulator, type SimSettings } from '@roster/upstream-sim'
import { ApiConfig, createLogger, loadConfig, WorkerConfig, type Db } from '@roster/shared'
import { redisUrl, waitFor } from '@roster/testing'
import { buildApp } from '../src/app.js'
import { GenerationDrain } from '../../worker/src/generation-drain.js'
import { apiRedis, createAppDeps, type AppDeps } from '../src/deps.js'
import { simulatorCatalogue, type Catalogue, type CatalogueModel, type Endpoint, type Protocol } from '@roster/gateway'

export const TEST_MASTER_KEY = 'ab'.repeat(32)

/** The API built in-process over a test database (no port), wired as main.ts wires it; close it when done. */
export async function buildTestApp(
  db: Db,
  env: Record<string, string> = {},
  catalogue?: Catalogue,
  providerEnv: NodeJS.ProcessEnv = {},
): Promise<FastifyInstance & { deps: AppDeps; closeAll(): Promise<void> }> {
  const config = loadConfig(ApiConfig, {
    VAULT_MASTER_KEY: TEST_MASTER_KEY,
    REDIS_URL: redisUrl(),
    AUTH_CACHE_MS: '0',
    INTERN_CACHE_MS: '0',
    ...env,
  })
  const redis = apiRedis(config)
  redis.on('error', () => {})
  await redis.connect().catch(() => {})
  const deps = createAppDeps(config, db, redis, catalogue, providerEnv, createLogger('api', 'silent'))
  const app = await buildApp(deps, { logger: false })
  return Object.assign(app, {
    deps,
    async closeAll() {
      await app.close()
      if (deps.readDb !== db) await deps.readDb.$disconnect()
      redis.disconnect()
    },
  })
}

export const auth = (key: string) => ({ authorization: `Bearer ${key}` })
export const json = { 'content-type': 'application/json' }

/** The simulator's model slug for each provider protocol, as the tests name them (`roster-sim/<slug>`). */
export const SIM_PATHS: Record<Protocol, string> = {
  'openai-chat': 'chat',
  'openai-responses': 'responses',
  'anthropic-messages': 'messages',
}
export const SIM_PROTOCOLS = Object.keys(SIM_PATHS) as Protocol[]
/** The demo catalogue's models (`simulatorCatalogue`, what `npm start` serves): one per protocol. */
export const DEMO_MODELS = SIM_PROTOCOLS.map((p) => `roster-sim/${SIM_PATHS[p]}`)

/**
 * For a test file: a test app serving the demo catalogue over its own simulator, both started
 * before the file's tests and closed after them.
 */
export function useDemoGateway(db: () => Db, settings: Partial<SimSettings> = {}) {
  const ctx = {} as { sim: Simulator; app: Awaited<ReturnType<typeof buildTestApp>> }
  beforeAll(async () => {
    ctx.sim = await startSimulator(settings)
    ctx.app = await buildTestApp(db(), {}, simulatorCatalogue(ctx.sim.url))
  })
  afterAll(async () => {
    await ctx.app?.closeAll()
    await ctx.sim?.close()
  })
  return ctx
}

/** A catalogue endpoint on an upstream simulator (its `/v1`). */
export const simEndpoint = (
  url: string,
  protocol: Protocol = 'openai-chat',
  extra: Partial<Endpoint> = {},
): Endpoint => ({
  provider: 'upstream-sim',
  protocol,
  base_url: `${url}/v1`,
  upstream_model: 'sim',
  tiers: ['default'],
  timeout_ms: 5_000,
  ...extra,
})

/** A catalogue model on the given endpoints, priced 1e-6 input, 1e-7 cached input, 2e-6 output per token. */
export const simModel = (id: string, endpoints: Endpoint[]): CatalogueModel => ({
  id,
  name: `simulator ${id}`,
  context_length: 8_000,
  pricing: { input: '0.000001', cached_input: '0.0000001', output: '0.000002' },
  capabilities: { tools: true, reasoning: true, images: true, caching: true },
  endpoints,
  created: 0,
})

/**
 * A Server-Sent Events body as the official clients read it: each event's `event:` name and parsed
 * `data:` (comment lines skipped), and whether it ended with `data: [DONE]`.
 */
export function sseEvents(text: string): { events: { name: string | undefined; data: any }[]; done: boolean } {
  const blocks = text.split('\n\n').filter((b) => b && !b.startsWith(':'))
  const done = blocks.at(-1) === 'data: [DONE]'
  const events = blocks
    .filter((b) => b !== 'data: [DONE]')
    .map((b) => ({ name: /^event: (.*)$/m.exec(b)?.[1], data: JSON.parse(/^data: (.*)$/m.exec(b)![1]!) }))
  return { events, done }
}

/**
 * Opens a stream, reads until `marker` shows (the first text), then goes away; resolves once the
 * upstream simulator saw its request cancelled.
 */
/** Reads a stream until `marker` shows, then leaves; answers what it read. */
export async function leaveMidStream(
  url: string,
  init: { headers: Record<string, string>; body: object },
  marker: string | RegExp,
  upstream: { stats: { cancelled: number } },
): Promise<string> {
  const abort = new AbortController()
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...init.headers },
    body: JSON.stringify(init.body),
    signal: abort.signal,
  })
  const reader = res.body!.getReader()
  let seen = ''
  const shown = () => (typeof marker === 'string' ? seen.includes(marker) : marker.test(seen))
  while (!shown()) seen += new TextDecoder().decode((await reader.read()).value)
  const before = upstream.stats.cancelled
  abort.abort()
  // The simulator's stream would go on for seconds; the upstream call must end long before.
  await waitFor(() => upstream.stats.cancelled > before, {
    timeoutMs: 3_000,
    what: 'the upstream stream to be cancelled',
  })
  return seen
}

/**
 * One intern chat request through the official client (`client.interns.chat`): every chunk as the
 * client parsed it, in order. `afterFirst` runs once the first chunk has arrived (to break
 * something mid-stream).
 */
export async function chatThroughClient(
  client: OpenRouter,
  internId: string,
  request: Record<string, unknown>,
  afterFirst?: () => Promise<unknown>,
): Promise<InternChatCompletionChunk[]> {
  const res = await client.interns.chat({
    internId,
    internChatCompletionRequest: { stream: true, ...request } as InternChatCompletionRequest,
  })
  const chunks: InternChatCompletionChunk[] = []
  for await (const chunk of res.result as AsyncIterable<InternChatCompletionChunk>) {
    chunks.push(chunk)
    if (chunks.length === 1) await afterFirst?.()
  }
  return chunks
}

/** The finish chunk of a stream that ended in error, as the official client reads it: the chunk's `error`. */
export function streamError(chunks: InternChatCompletionChunk[]) {
  const finish = chunks.at(-2)!
  return {
    finishReason: finish.choices[0]?.finishReason,
    model: finish.model,
    error: finish.error,
    final: chunks.at(-1),
  }
}

/** The worker's generations drain, in this process, over the stream of `queuePrefix`: started (stop it after). */
export function startDrain(db: Db, databaseUrl: string, queuePrefix: string): GenerationDrain {
  const config = loadConfig(WorkerConfig, {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl(),
    QUEUE_PREFIX: queuePrefix,
  })
  const drain = new GenerationDrain(db, config, queuePrefix, createLogger('worker', 'silent'), { blockMs: 50 })
  drain.start()
  return drain
}

/**
 * A call of the official client that was not asked to stream, as its whole answer: the client types
 * such a call's result as the answer or a stream (one method serves both); a stream here is an error.
 */
export function whole<T extends object>(result: T | AsyncIterable<unknown>): Exclude<T, AsyncIterable<unknown>> {
  if (Symbol.asyncIterator in result) throw new Error('the client returned a stream where a whole answer was asked for')
  return result as Exclude<T, AsyncIterable<unknown>>
}

/** A stream the official client was asked for, as one: the counterpart of `whole`. */
export function streamed<T>(result: object): AsyncIterable<T> {
  if (!(Symbol.asyncIterator in result))
    throw new Error('the client returned a whole answer where a stream was asked for')
  return result as AsyncIterable<T>
}
