import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

// What a test reads off a running process or the machine: a metric, the processes' command lines, files.
/** The value of one sample of a Prometheus text exposition (0 when absent), e.g. `metric(text, 'x_total', { reason: 'a' })`. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue
    total += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return total
}

/** A process's metrics, scraped now. */
export async function scrape(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
}

/**
 * The command lines of this machine's processes (as `ps -eo args` prints them), read from /proc:
 * no procps needed (a minimal Debian has none). Processes that end while being read are skipped.
 */
export function processCommandLines(): string[] {
  const lines: string[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean)
      if (args.length) lines.push(args.join(' '))
    } catch {
      // Gone, or not ours to read.
    }
  }
  return lines
}

/** Every file under a directory (links not followed). */
export function filesUnder(dir: string): string[] {
  const out: string[] = []
  const pending = [dir]
  while (pending.length) {
    const at = pending.pop()!
    let entries
    try {
      entries = readdirSync(at, { withFileTypes: true })
    } catch {
      continue
    }
    for (const e of entries) {
      const path = join(at, e.name)
      if (e.isDirectory()) pending.push(path)
      else if (e.isFile()) out.push(path)
    }
  }
  return out
}
