// One flood of fair-use.mjs's sequential-probe scenarios, in a process of its own (started at
// nice 19, so that the load generator does not take the CPU the API and the probe need):
//
//   node bench/fair-use-flood.mjs <base url> <one-key|unknown-keys|bare> <key> <count> <concurrency>
//
// one-key: `count` quick /responses calls with the key, `concurrency` at a time (its excess refused
// with 429, as documented); unknown-keys: `count` GET /models with random keys never issued. Prints
// the statuses it got, as JSON, when done; bare: `count` chat completions to the bare proxy (the floor).
import { randomBytes } from 'node:crypto'
import { Agent, request } from 'undici'

const [base, mode, key, count, concurrency] = process.argv.slice(2)
const agent = new Agent({ connections: Number(concurrency), pipelining: 1 })
const statuses = {}
let sent = 0
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (sent++ < Number(count)) {
      const res = await (
        mode === 'one-key'
          ? request(`${base}/responses`, {
              dispatcher: agent,
              method: 'POST',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
              body: '{"model":"bench/quick","input":"flood","max_output_tokens":4}',
            })
          : mode === 'bare'
            ? request(`${base}/chat/completions`, {
                dispatcher: agent,
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: '{"model":"sim","messages":[{"role":"user","content":"flood"}],"max_tokens":4}',
              })
            : request(`${base}/models`, {
                dispatcher: agent,
                headers: { authorization: `Bearer sk-roster-v1-${randomBytes(24).toString('hex')}` },
              })
      ).catch(() => undefined)
      const status = res?.statusCode ?? 'failed'
      statuses[status] = (statuses[status] ?? 0) + 1
      await res?.body.dump()
    }
  }),
)
await agent.close()
process.stdout.write(JSON.stringify(statuses))
