import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RuntimeConfig } from '@roster/protocol'
import { lacking, processCommandLines } from '@roster/testing'
import { confineCommands, diskUsage, runSandboxed, type CommandOptions, type Confinement } from './sandbox.js'
import { ownWorkspace, prepareConfinement, reachableBySandboxUser } from './confinement.js'

// One intern's worst commands, each in a real sandbox with the host's confinement: a fork bomb, a
// memory hog and a disk filler are held to their limits, and while each runs another intern's
// command and the host go on working. (Control groups and the unprivileged user need root; as
// another user the rlimits alone hold, and the figures say which was in force.)
const noSandbox = await lacking(['bubblewrap'], 'the sandbox limits tests')

const config = RuntimeConfig.parse({
  RUNTIME_TOKEN: 'x'.repeat(32),
  PORT: String(40_000 + (process.pid % 20_000)),
  SANDBOX_PROCESSES: '64',
  SANDBOX_MEMORY_MB: '64',
  SANDBOX_FILE_MB: '8',
  SANDBOX_WORKSPACE_MB: '32',
  SANDBOX_TMP_MB: '16',
})
const root = mkdtempSync(join(tmpdir(), 'roster-limits-'))
const bad = join(root, 'interns', 'bad', 'workspace')
const good = join(root, 'interns', 'good', 'workspace')
let confinement: Confinement

beforeAll(async () => {
  const prepared = prepareConfinement(config)
  confinement = prepared.confinement
  if (confinement.user && (await reachableBySandboxUser(root, confinement.user))) delete confinement.user
  for (const dir of [bad, good]) {
    mkdirSync(dir, { recursive: true })
    await ownWorkspace(dir, confinement.user)
  }
  confineCommands(confinement)
  console.log(
    `sandbox limits in force: ${confinement.cgroups ? `cgroup ${confinement.cgroups.kind}` : 'no control group'}, ${confinement.user ? `uid ${confinement.user.uid}` : `the host's uid ${process.getuid?.()}`}; ${prepared.notes.join('; ') || 'nothing missing'}`,
  )
})
afterAll(() => confineCommands(undefined))

const opts = (workspace: string, extra: Partial<CommandOptions> = {}): CommandOptions => ({
  workspace,
  timeoutMs: 8_000,
  maxOutputBytes: 64 * 1024,
  ...extra,
})

/** While `attack` runs in the bad intern's sandbox: the good intern's command and the host's own both work. */
async function alongside(attack: Promise<unknown>) {
  // Not a wait for an event: the second the attack has to reach full strength is the scenario.
  await new Promise((r) => setTimeout(r, 1_000))
  const other = await runSandboxed('echo fine; id -u', opts(good, { timeoutMs: 20_000 }))
  const host = execFileSync('/bin/sh', ['-c', 'echo host fine'], { encoding: 'utf8', timeout: 10_000 })
  await attack
  return { other, host }
}

describe.skipIf(noSandbox)("an intern's commands are held to their limits", () => {
  it('runs as an unprivileged user when the host is root, and what it writes is that user’s', async () => {
    const res = await runSandboxed('id -u; touch mine', opts(good))
    const uid = confinement.user?.uid ?? process.getuid?.()
    expect(res.stdout.trim()).toBe(String(uid))
    expect(statSync(join(good, 'mine')).uid).toBe(uid)
    if (process.getuid?.() === 0) expect(confinement.user?.uid, 'as root the host must switch users').toBeGreaterThan(0)
  })

  it('contains a fork bomb: the processes stop at the limit, the other intern and the host go on', async () => {
    const started = performance.now()
    const bomb = runSandboxed(
      ':(){ :|:& };: 2>/dev/null; sleep 3; n=$(ls /proc | grep -c "^[0-9]"); echo "reached $n"',
      opts(bad, { timeoutMs: 6_000 }),
    )
    const { other, host } = await alongside(bomb)
    const res = await bomb
    const reached = Number(/reached (\d+)/.exec(res.stdout)?.[1] ?? config.SANDBOX_PROCESSES)
    console.log(
      `fork bomb: ${reached} processes at most (limit ${config.SANDBOX_PROCESSES}), ended in ${Math.round(performance.now() - started)} ms (${res.limit ?? res.signal ?? res.exitCode})`,
    )
    expect(reached).toBeLessThanOrEqual(config.SANDBOX_PROCESSES)
    expect(other).toMatchObject({ exitCode: 0, stdout: expect.stringMatching(/^fine\n/) })
    expect(host).toBe('host fine\n')
    // Nothing of the bomb outlives its command.
    expect(processCommandLines().filter((l) => l.includes(':|:')).length).toBe(0)
  })

  it('contains a memory hog: it is stopped at the memory limit, the other intern goes on', async () => {
    const hog = runSandboxed('x=$(head -c 400000000 /dev/zero | tr "\\0" a); echo "held ${#x}"', opts(bad))
    const { other } = await alongside(hog)
    const res = await hog
    console.log(
      `memory hog: ${res.stdout.trim() || 'killed'} (limit ${config.SANDBOX_MEMORY_MB} MiB; ${res.limit ?? res.signal ?? res.exitCode})`,
    )
    expect(res.stdout).not.toMatch(/held 400000000/)
    expect(res.exitCode).not.toBe(0)
    if (confinement.cgroups) expect(res.limit).toBe('memory')
    expect(other.exitCode).toBe(0)
  })

  it('contains a disk filler: no file past its size, no workspace past its ceiling, the other intern goes on', async () => {
    const one = await runSandboxed('head -c 100000000 /dev/zero > big; echo "exit $?"', opts(bad))
    expect(statSync(join(bad, 'big')).size).toBeLessThanOrEqual(config.SANDBOX_FILE_MB * 1024 * 1024)
    const filler = runSandboxed(
      'i=0; while true; do i=$((i+1)); head -c 4000000 /dev/zero > f$i || true; done',
      opts(bad, { timeoutMs: 15_000 }),
    )
    const { other } = await alongside(filler)
    const res = await filler
    const used = await diskUsage(bad)
    console.log(
      `disk filler: one file stopped at ${statSync(join(bad, 'big')).size} bytes (${one.stdout.trim()}), the workspace at ${(used / 1024 / 1024).toFixed(1)} MiB (ceiling ${config.SANDBOX_WORKSPACE_MB} MiB) after ${Math.round(res.durationMs)} ms (${res.limit})`,
    )
    expect(res.limit).toBe('workspace')
    expect(res.timedOut).toBe(false)
    // Stopped within a second's writing of the ceiling (the watch measures about every second).
    expect(used).toBeLessThan((config.SANDBOX_WORKSPACE_MB + 1024) * 1024 * 1024)
    expect(other.exitCode).toBe(0)
    // Past the ceiling the intern may still clean up.
    const cleaned = await runSandboxed('rm -f f* big; echo cleaned', opts(bad))
    expect([cleaned.exitCode, cleaned.limit]).toEqual([0, undefined])
  })

  it("keeps a sandbox's /tmp to its size", async () => {
    const res = await runSandboxed(
      'head -c 40000000 /dev/zero > /tmp/fill; echo "exit $?"; du -sm /tmp | cut -f1',
      opts(good),
    )
    const [exit, mib] = res.stdout.trim().split('\n')
    expect(exit).not.toBe('exit 0')
    expect(Number(mib)).toBeLessThanOrEqual(config.SANDBOX_TMP_MB)
  })
})
