import { startSimulator } from './server.js'
import { defaultSettings } from './settings.js'

// `node packages/upstream-sim/dist/main.js`: the simulator as a process. SIM_* variables set its defaults.
const env = process.env
const sim = await startSimulator({
  host: env.HOST ?? '127.0.0.1',
  port: Number(env.PORT ?? 3300),
  latencyMs: Number(env.SIM_LATENCY_MS ?? defaultSettings.latencyMs),
  tokensPerSecond: Number(env.SIM_TOKENS_PER_SECOND ?? defaultSettings.tokensPerSecond),
  replyTokens: Number(env.SIM_REPLY_TOKENS ?? defaultSettings.replyTokens),
  apiKey: env.SIM_API_KEY ?? '',
  sampleUrl: env.SIM_SAMPLE_URL ?? defaultSettings.sampleUrl,
  // SIM_DEMO=1 (npm start's demo): says what it is instead of generated words, calls no tool unasked.
  demo: env.SIM_DEMO === '1',
})
process.stdout.write(`upstream simulator (not a real model provider) listening on ${sim.url}\n`)
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.once(signal, () => void sim.close().then(() => process.exit(0)))
