import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from './node-process.js'

// The coding agents people point at gateways, installed from npm as a user installs them (each
// ships its binary in its packages), at the versions the tests were written against, once per
// checkout (node_modules/.cache), without running their install scripts.

export const CODING_AGENTS = {
  '@anthropic-ai/claude-code': '2.1.332',
  '@openai/codex': '0.171.0',
  'opencode-ai': '1.18.33',
} as const

const dir = join(repoRoot, 'node_modules', '.cache', 'roster-coding-agents')
const modules = join(dir, 'node_modules')

/** Where each agent's program is, once installed. */
export const codingAgentPaths = {
  /** Claude Code's native binary (its launcher needs the install script the tests do not run). */
  claude: join(modules, '@anthropic-ai', 'claude-code-linux-x64', 'claude'),
  /** Codex's Node launcher, which finds its native binary and sandbox helper. */
  codex: join(modules, '@openai', 'codex', 'bin', 'codex.js'),
  /** opencode's native binary (its launcher is put in place by the install script). */
  opencode: join(modules, 'opencode-linux-x64', 'bin', 'opencode'),
}

/** Installs the agents if they are not installed yet: undefined when they are there, else why not. */
export function installCodingAgents(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    return `the agents' tests run on linux-x64 (this is ${process.platform}-${process.arch})`
  if (Object.values(codingAgentPaths).every((p) => existsSync(p))) return undefined
  mkdirSync(dir, { recursive: true })
  const specs = Object.entries(CODING_AGENTS).map(([name, version]) => `${name}@${version}`)
  const r = spawnSync(
    'npm',
    [
      'install',
      '--prefix',
      dir,
      '--no-save',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...specs,
    ],
    { encoding: 'utf8', timeout: 300_000 },
  )
  if (r.status !== 0 || !Object.values(codingAgentPaths).every((p) => existsSync(p)))
    return `npm could not install ${specs.join(' ')} (${(r.stderr || String(r.error ?? '')).trim().split('\n').slice(-2).join(' ')})`
  return undefined
}
