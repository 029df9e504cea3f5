/**
 * A process's orderly stop on SIGTERM or SIGINT, the same for every Roster process: it says so,
 * runs `stop` once (a second signal changes nothing), and exits 0; if `stop` has not finished
 * within `forceAfterMs` (a stream or a job that would hold it for good) it exits 1.
 */
export function stopOnSignals(
  log: { info(obj: object, msg: string): void },
  doing: string,
  forceAfterMs: number,
  stop: () => Promise<unknown>,
) {
  let stopping = false
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, async () => {
      if (stopping) return
      stopping = true
      log.info({ signal }, `shutting down: ${doing}`)
      setTimeout(() => process.exit(1), forceAfterMs).unref()
      await stop()
      process.exit(0)
    })
  }
}

/** Waits for `work` to settle, or `ms` at most (the timer does not keep the process up). */
export function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  const settled = work.then(
    () => undefined,
    () => undefined,
  )
  return Promise.race([settled, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())])
}
