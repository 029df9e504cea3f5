import { z } from 'zod'

// The limits every listener a client can reach holds it to, as settings (enforced by
// @roster/platform's listener-limits.ts; docs/limits.md).

const ms = z.coerce.number().int().positive()

/** The settings every process with a listener reads (see docs/limits.md). */
export const listenerSettings = {
  HEADERS_TIMEOUT_MS: ms
    .default(10_000)
    .describe(
      "The request line and headers must arrive within this long of the connection's first byte (or of its opening).",
    ),
  REQUEST_TIMEOUT_MS: ms
    .default(60_000)
    .describe(
      'The whole request, body included, must arrive within this long; past it 408 and the connection is closed.',
    ),
  BODY_IDLE_TIMEOUT_MS: ms
    .default(5_000)
    .describe('A body that stops arriving for this long is cut (408), however long the request may take in all.'),
  KEEP_ALIVE_TIMEOUT_MS: ms.default(72_000).describe('An idle keep-alive connection is closed after this long.'),
  MAX_CONNECTIONS: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      "Connections one process holds at most; past it new ones are closed at once. 0: three quarters of what the file-descriptor limit leaves once the process's own files are reserved.",
    ),
}
export type ListenerSettings = { [K in keyof typeof listenerSettings]: z.infer<(typeof listenerSettings)[K]> }
