// A V8 CPU profile's busy samples in a window: what bench/profile-split.mjs and
// bench/profile-diff.mjs read. The window is the profile's last `seconds`, the very last second
// left out (the process ending); each sample stands for the time until the next (as DevTools
// counts it), in µs.
import { readFileSync } from 'node:fs'

/** Calls `each(callFrame, µs)` for every sample in the window but idle ones. */
export function busySamples(file, seconds, each) {
  const profile = JSON.parse(readFileSync(file, 'utf8'))
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]))
  let at = profile.startTime
  const times = profile.timeDeltas.map((d) => (at += d))
  const end = times.at(-1) - 1e6
  const start = end - Number(seconds) * 1e6
  profile.samples.forEach((id, i) => {
    if (times[i] < start || times[i] > end) return
    const frame = frames.get(id)
    if (frame.functionName !== '(idle)') each(frame, times[i + 1] - times[i])
  })
}
