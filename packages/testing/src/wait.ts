/** Polls until the predicate holds; fails with what it was waiting for. */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  {
    timeoutMs = 10_000,
    intervalMs = 25,
    what = 'condition',
  }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await predicate()) return
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}
