import { z } from 'zod'
import { port } from './values.js'

// `npm start`'s own settings (scripts/start.mjs).

/** `npm start`'s own settings (scripts/start.mjs): how it runs everything on one machine. */
export const StartConfig = z.object({
  RUNTIME_HOSTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(16)
    .default(1)
    .describe(
      'Runtime hosts `npm start` runs (a fleet on one machine), on ports from `RUNTIME_PORT` up, each with its own id and data directory.',
    ),
  RUNTIME_PORT: port.default(3100).describe("The first runtime host's port."),
  SIM_PORT: port
    .default(3300)
    .describe(
      "Port of the upstream simulator `npm start` runs when no `MODEL_CATALOGUE` is set (its demo catalogue's models answer from it).",
    ),
  SIM_TOKENS_PER_SECOND: z.coerce
    .number()
    .positive()
    .default(50)
    .describe('How fast that simulator streams its replies.'),
  ROSTER_METRICS: z
    .enum(['0', '1'])
    .default('0')
    .describe(
      '`1`: each process serves Prometheus metrics on the ports `deploy/prometheus/prometheus.yml` scrapes (API 9464, worker 9465, first runtime host 9466).',
    ),
  ROSTER_NODE_FLAGS: z
    .string()
    .optional()
    .describe(
      'Node flags for every process `npm start` and `npm run bench` start, replacing the choice of `scripts/node-flags.mjs` (which says why): `--no-allocation-site-pretenuring`, plus `--single-threaded-gc` on 2 cores or fewer. Empty: no flags.',
    ),
})
export type StartConfig = z.infer<typeof StartConfig>
