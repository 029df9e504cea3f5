import { spawnSync } from 'node:child_process'
import { describe } from 'vitest'

// What a test needs beyond the README's prerequisites (Node, PostgreSQL, Redis), how to tell
// whether this machine has it, and how to get it. A test that lacks something is reported as not
// run, with one plain line naming what it needs and how to get it; it never fails or times out for
// that. With ROSTER_TEST_TOOLS=require (CI, which installs everything) a lack is a failure instead.

export type Need =
  | 'bubblewrap'
  | 'socat'
  | 'curl'
  | 'root'
  | 'iproute2'
  | 'prometheus'
  | 'chromium'
  | 'docker'
  | 'redis-server'
  | 'coding-agents'
  | 'searx'
  | 'postgres-server'

interface Requirement {
  /** Why this machine cannot give it, or undefined when it can. */
  missing(): string | undefined | Promise<string | undefined>
  /** How to get it: Debian or Ubuntu, and macOS. */
  debian: string
  macos: string
}

/** Whether a command runs here (ENOENT or EACCES: it is not there, or not runnable). */
const runs = (command: string, args: string[] = ['--version']) => {
  const r = spawnSync(command, args, { stdio: 'ignore', timeout: 10_000 })
  return !r.error && r.status === 0
}

export const REQUIREMENTS: Record<Need, Requirement> = {
  bubblewrap: {
    // Installed and allowed to make namespaces as this user (some containers forbid user namespaces).
    missing: () => {
      const r = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--die-with-parent', 'true'], {
        encoding: 'utf8',
        timeout: 10_000,
      })
      if (r.error) return 'bubblewrap (bwrap) is not installed'
      return r.status === 0
        ? undefined
        : `bubblewrap cannot make namespaces here (${r.stderr.trim() || `exit ${r.status}`})`
    },
    debian: 'sudo apt-get install bubblewrap',
    macos: 'none (Linux namespaces): run the tests in a Linux VM or container',
  },
  socat: {
    missing: () => (runs('socat', ['-V']) ? undefined : 'socat is not installed'),
    debian: 'sudo apt-get install socat',
    macos: 'brew install socat',
  },
  curl: {
    missing: () => (runs('curl') ? undefined : 'curl is not installed'),
    debian: 'sudo apt-get install curl',
    macos: 'none (macOS has curl)',
  },
  root: {
    missing: () => (process.getuid?.() === 0 ? undefined : 'it must run as root'),
    debian: 'run the tests as root (sudo -E npm test)',
    macos: 'none (Linux network namespaces)',
  },
  iproute2: {
    missing: () => (runs('ip', ['-V']) ? undefined : 'ip (iproute2) is not installed'),
    debian: 'sudo apt-get install iproute2',
    macos: 'none (Linux network namespaces)',
  },
  prometheus: {
    missing: () => (runs('prometheus') && runs('promtool') ? undefined : 'prometheus and promtool are not installed'),
    debian: 'sudo apt-get install prometheus',
    macos: 'brew install prometheus',
  },
  chromium: {
    missing: () => (runs(chromiumPath()) ? undefined : `Chromium is not at ${chromiumPath()} (CHROMIUM_PATH)`),
    debian: 'sudo apt-get install chromium',
    macos: 'brew install --cask chromium, then CHROMIUM_PATH=/Applications/Chromium.app/Contents/MacOS/Chromium',
  },
  'redis-server': {
    // Private Redis servers and clusters that a test kills and starts again (a Redis already running is not enough).
    missing: () =>
      runs('redis-server') && runs('redis-cli') ? undefined : 'redis-server and redis-cli are not installed',
    debian: 'sudo apt-get install redis-server',
    macos: 'brew install redis',
  },
  searx: {
    // Debian's searx (SearXNG's parent, the same JSON search API), run by Debian's own Python.
    missing: () =>
      runs('/usr/bin/python3', [
        '-c',
        'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("searx") else 1)',
      ])
        ? undefined
        : 'searx is not installed',
    debian: 'sudo apt-get install searx',
    macos: "none (the test runs Debian's searx package): run it in a Linux VM or container",
  },
  'postgres-server': {
    // PostgreSQL's server binaries (initdb, pg_basebackup, pg_ctl), for a primary and replica of a test's own.
    missing: async () => {
      const { postgresBinaries } = await import('./pg-replica.js')
      if (!postgresBinaries()) return "PostgreSQL's server binaries (initdb, pg_basebackup, pg_ctl) are not installed"
      if (process.getuid?.() === 0 && !runs('id', ['postgres']))
        return 'as root, Postgres runs as the postgres user, which is missing'
      return undefined
    },
    debian: 'sudo apt-get install postgresql',
    macos: 'brew install postgresql@15',
  },
  'coding-agents': {
    // Claude Code, Codex and opencode, installed from npm by the test itself (once per checkout).
    missing: async () => (await import('./coding-agents.js')).installCodingAgents(),
    debian: 'let npm reach its registry (the test installs the agents into node_modules/.cache)',
    macos: "the same, on linux-x64 (the tests run the agents' Linux binaries)",
  },
  docker: {
    missing: async () => {
      const { dockerProblem } = await import('./containers.js')
      return dockerProblem()
    },
    debian: 'sudo apt-get install docker.io, start dockerd, and add yourself to the docker group',
    macos: 'install Docker Desktop',
  },
}

/** Where the tests find Chromium: CHROMIUM_PATH, else Debian's. */
export const chromiumPath = () => process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

const cache = new Map<Need, Promise<string | undefined>>()
const problem = (need: Need) => {
  let found = cache.get(need)
  if (!found) cache.set(need, (found = Promise.resolve(REQUIREMENTS[need].missing())))
  return found
}

/** The plain line for what is missing of `needs`, or undefined when all are here. */
export async function missingNeeds(needs: Need[]): Promise<string | undefined> {
  const lacking: string[] = []
  for (const need of needs) {
    const why = await problem(need)
    if (why) lacking.push(`${why}: ${REQUIREMENTS[need].debian} (macOS: ${REQUIREMENTS[need].macos})`)
  }
  return lacking.length ? lacking.join('; ') : undefined
}

/**
 * For tests that need `needs`: undefined when this machine has them; otherwise the reason, after
 * one line saying what `what` needs and how to get it (for `it.skipIf(reason)`). With
 * ROSTER_TEST_TOOLS=require (CI) a lack throws instead: nothing may be skipped there.
 */
export async function lacking(needs: Need[], what: string): Promise<string | undefined> {
  const why = await missingNeeds(needs)
  if (why && process.env.ROSTER_TEST_TOOLS === 'require')
    throw new Error(`ROSTER_TEST_TOOLS=require, but ${what} cannot run here: ${why}`)
  if (why) process.stdout.write(`not run: ${what}: ${why}\n`)
  return why
}

/**
 * A describe block that runs only where `needs` are met. Where one is not, its tests are reported
 * as skipped and one line says what the block needs and how to get it; with ROSTER_TEST_TOOLS=require
 * the block fails instead (nothing may be skipped in CI).
 */
export async function describeNeeding(needs: Need[], name: string, body: () => void): Promise<void> {
  const why = await lacking(needs, `"${name}"`)
  describe.skipIf(!!why)(name, body)
}
