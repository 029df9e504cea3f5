import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import {
  bwrapArguments,
  commandArguments,
  EGRESS_SOCKET,
  ETC_ENTRIES,
  OWN_LIMIT_MARGIN_S,
  PROXY,
  rlimitLine,
  type EgressForwarder,
  type HostLayout,
  type SandboxPolicy,
} from './sandbox-policy.js'

// The sandbox's rules, read off its arguments without bubblewrap (sandbox.test.ts runs them in it).

const merged: HostLayout = {
  etc: ['passwd', 'group', 'resolv.conf', 'ssl', 'shadow', 'sudoers', 'ssh'],
  rootDirs: [
    { name: 'bin', linkTo: 'usr/bin' },
    { name: 'lib', linkTo: 'usr/lib' },
    { name: 'lib64', linkTo: 'usr/lib64' },
  ],
}
const split: HostLayout = { etc: ['passwd'], rootDirs: [{ name: 'bin' }, { name: 'lib' }] }
const socat: EgressForwarder = { start: '/usr/bin/socat … &', binds: [] }
const nodeForwarder: EgressForwarder = {
  start: '/opt/node/bin/node -e … &',
  binds: ['--ro-bind', '/opt/node/bin/node', '/opt/node/bin/node'],
}
const base: SandboxPolicy = { workspace: '/srv/roster/interns/a1/workspace', tmpBytes: 64 * 1024 * 1024 }

/** bwrap's options as [option, ...its operands], in order. */
function options(args: string[]): string[][] {
  const arity: Record<string, number> = {
    '--ro-bind': 2,
    '--bind': 2,
    '--symlink': 2,
    '--setenv': 2,
    '--size': 1,
    '--tmpfs': 1,
    '--dev': 1,
    '--proc': 1,
    '--remount-ro': 1,
    '--chdir': 1,
  }
  const out: string[][] = []
  for (let i = 0; i < args.length;) {
    const n = arity[args[i]!] ?? 0
    if (!args[i]!.startsWith('--')) throw new Error(`not an option: ${args[i]}`)
    out.push(args.slice(i, i + 1 + n))
    i += 1 + n
  }
  return out
}
const writable = (args: string[]) => options(args).filter(([o]) => o === '--bind')
const env = (args: string[]) =>
  Object.fromEntries(
    options(args)
      .filter(([o]) => o === '--setenv')
      .map(([, k, v]) => [k, v]),
  )

describe('a sandbox policy as bubblewrap arguments', () => {
  it('makes the workspace the only writable place of the host, the root read-only once mounted', () => {
    const args = bwrapArguments(base, merged)
    expect(writable(args)).toEqual([['--bind', base.workspace, '/workspace']])
    const opts = options(args)
    const remount = opts.findIndex(([o, p]) => o === '--remount-ro' && p === '/')
    expect(remount).toBeGreaterThan(
      opts.findLastIndex(([o]) => ['--bind', '--ro-bind', '--symlink', '--tmpfs'].includes(o!)),
    )
    expect(opts.filter(([o]) => o === '--tmpfs').map(([, p]) => p)).toEqual(['/tmp', '/run'])
    expect(args).toContain('--chdir')
  })

  it('reads only the allowed entries of /etc, whatever else the host has', () => {
    const etc = options(bwrapArguments(base, merged))
      .filter(([o, from]) => o === '--ro-bind' && from!.startsWith('/etc/'))
      .map(([, from, to]) => [from, to])
    expect(etc).toEqual([
      ['/etc/passwd', '/etc/passwd'],
      ['/etc/group', '/etc/group'],
      ['/etc/resolv.conf', '/etc/resolv.conf'],
      ['/etc/ssl', '/etc/ssl'],
    ])
    for (const secret of ['shadow', 'sudoers', 'ssh']) expect(ETC_ENTRIES).not.toContain(secret)
  })

  it('links /bin and the like as a merged-/usr host has them, and binds them read-only where they are directories', () => {
    const mounts = (host: HostLayout) =>
      options(bwrapArguments(base, host)).filter(([, , to]) => /^\/(bin|lib|lib64)$/.test(to ?? ''))
    expect(mounts(merged)).toEqual([
      ['--symlink', 'usr/bin', '/bin'],
      ['--symlink', 'usr/lib', '/lib'],
      ['--symlink', 'usr/lib64', '/lib64'],
    ])
    expect(mounts(split)).toEqual([
      ['--ro-bind', '/bin', '/bin'],
      ['--ro-bind', '/lib', '/lib'],
    ])
  })

  it('has no network without an egress socket: every namespace unshared, no proxy, nothing of the host in the environment', () => {
    const args = bwrapArguments({ ...base, env: { TERM: 'dumb' } }, merged)
    expect(args).toContain('--unshare-all')
    expect(args).not.toContain('--share-net')
    expect(args).toContain('--clearenv')
    expect(args).toContain('--die-with-parent')
    expect(env(args)).toEqual({
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/workspace',
      LANG: 'C.UTF-8',
      TERM: 'dumb',
    })
  })

  it('with the network, reaches out only through the egress socket: still its own loopback, the proxy in the environment', () => {
    const socket = '/srv/roster/egress/a1.sock'
    const args = bwrapArguments({ ...base, egressSocket: socket, forwarder: socat }, merged)
    expect(writable(args)).toEqual([
      ['--bind', base.workspace, '/workspace'],
      ['--bind', socket, EGRESS_SOCKET],
    ])
    expect(args).toContain('--unshare-all')
    expect(args).not.toContain('--share-net')
    expect(env(args)).toMatchObject({
      HTTP_PROXY: PROXY,
      HTTPS_PROXY: PROXY,
      http_proxy: PROXY,
      https_proxy: PROXY,
      NO_PROXY: '',
    })
    // A forwarder outside /usr (Node from elsewhere) is mounted read-only, and only then.
    const withNode = options(bwrapArguments({ ...base, egressSocket: socket, forwarder: nodeForwarder }, merged))
    expect(withNode).toContainEqual(['--ro-bind', '/opt/node/bin/node', '/opt/node/bin/node'])
    expect(() => bwrapArguments({ ...base, egressSocket: socket }, merged)).toThrow(/forwarder/)
  })

  it('never makes anything but the workspace and the egress socket writable, whatever the policy (property)', () => {
    const path = fc.stringMatching(/^\/[a-z0-9/._-]{1,40}$/)
    fc.assert(
      fc.property(
        path,
        fc.option(path, { nil: undefined }),
        fc.dictionary(fc.stringMatching(/^[A-Z_]{1,8}$/), fc.string()),
        fc.subarray([...ETC_ENTRIES, 'shadow', 'gshadow', 'sudoers', 'ssh', 'roster']),
        (workspace, egressSocket, extra, etc) => {
          const policy: SandboxPolicy = {
            workspace,
            egressSocket,
            forwarder: egressSocket ? socat : undefined,
            tmpBytes: 1024,
            env: extra,
          }
          const args = bwrapArguments(policy, { ...merged, etc })
          const rw = writable(args).map(([, from]) => from)
          expect(rw).toEqual(egressSocket ? [workspace, egressSocket] : [workspace])
          for (const [o, from] of options(args))
            if (o === '--ro-bind' && from!.startsWith('/etc/')) expect(ETC_ENTRIES).toContain(from!.slice(5))
          expect(args).toContain('--unshare-all')
          expect(args).not.toContain('--share-net')
        },
      ),
    )
  })
})

describe('the command inside the sandbox', () => {
  it('is killed by the sandbox itself a margin after the host would, and takes its arguments apart from its text', () => {
    const argv = commandArguments('echo "$1"', { timeoutMs: 2_500, args: ['a b'] })
    expect(argv.slice(0, 2)).toEqual(['/usr/bin/bash', '-c'])
    expect(argv[2]).toContain(`/usr/bin/timeout -s KILL ${3 + OWN_LIMIT_MARGIN_S} `)
    expect(argv.slice(3)).toEqual(['roster-sandbox', 'echo "$1"', 'a b'])
    expect(argv[2]).not.toContain('ulimit')
    expect(argv[2]).not.toContain('disown')
  })

  it('sets its rlimits first, the address space only where no control group holds its memory', () => {
    const limits = { processes: 64, cpuSeconds: 10, fileBytes: 1024 * 1024, memoryBytes: 256 * 1024 * 1024 }
    expect(rlimitLine(limits, false)).toBe('ulimit -u 64 -t 10 -f 1024 -v 262144 2>/dev/null\n')
    expect(rlimitLine(limits, true)).toBe('ulimit -u 64 -t 10 -f 1024 2>/dev/null\n')
    const script = commandArguments('true', { timeoutMs: 1_000, limits, memoryGroup: true })[2]!
    expect(script.startsWith('ulimit -u 64 -t 10 -f 1024 2>/dev/null\n')).toBe(true)
  })

  it('with the network, starts the forwarder first and waits for it before the command', () => {
    const script = commandArguments('curl -s example.org', { timeoutMs: 1_000, forwarder: socat })[2]!
    const [forwarder, command] = [script.indexOf(socat.start), script.indexOf('/usr/bin/timeout')]
    expect(forwarder).toBeGreaterThanOrEqual(0)
    expect(script.indexOf('/dev/tcp/127.0.0.1/3128')).toBeGreaterThan(forwarder)
    expect(command).toBeGreaterThan(script.indexOf('/dev/tcp/127.0.0.1/3128'))
  })
})
