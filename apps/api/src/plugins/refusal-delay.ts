// How a refusal is held back before it is answered (REFUSAL_DELAY_MS): a client that sends again the
// moment it is refused would otherwise turn its refusals into a load of their own (an HTTP/1.1
// connection waits for its answer before its next request). One mechanism for every refusal that
// waits: a share's (fair-use.ts) and unknown keys' past their address's budget (auth.ts).

/**
 * `ms`, spread over half to one and a half times it: refusals made in the same moment (a flood's
 * connections, refused together) are answered apart, not as one wave that blocks the process for
 * everyone at once, and come back apart.
 */
export const spread = (ms: number) => Math.round(ms * (0.5 + Math.random()))

/** Calls `answer` after about `ms` (spread), or at once when `ms` is 0; the wait never holds the process open. */
export function afterRefusalDelay(ms: number, answer: () => void): void {
  if (!ms) return answer()
  setTimeout(answer, spread(ms)).unref()
}
