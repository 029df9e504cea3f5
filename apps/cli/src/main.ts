import { parseArgs } from 'node:util'
import {
  ApiKeyKinds,
  bootstrap,
  CliConfig,
  createAccount,
  createApiKey,
  createDb,
  createUser,
  createWorkspace,
  drainHost,
  fleetTimes,
  isAppError,
  listHosts,
  loadConfigOrExit,
  setVaultWrites,
  type ApiKeyKind,
  type Db,
} from '@roster/shared'

const usage = `usage: npm run -s admin -- <command> [--json]
  bootstrap                                         account + workspace + member + one key per kind
  account create [--no-programme] [--no-lifecycle-writes] [--no-vault-writes]
  account vault-writes --account ID on|off          allow or refuse (503) vault stores, deletes and copies
  workspace create --account ID [--no-interns]
  user create --workspace ID
  key create --kind user|organization|management|intern --workspace ID [--user ID] [--intern ID]
  runtime list                                      each runtime host: state (live, draining, dead), interns, free room
  runtime drain HOST                                the host takes no new interns; its interns move to others
Reads DATABASE_URL. With --json, prints exactly one JSON object.`

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    json: { type: 'boolean', default: false },
    'no-programme': { type: 'boolean', default: false },
    'no-lifecycle-writes': { type: 'boolean', default: false },
    'no-vault-writes': { type: 'boolean', default: false },
    'no-interns': { type: 'boolean', default: false },
    account: { type: 'string' },
    workspace: { type: 'string' },
    user: { type: 'string' },
    intern: { type: 'string' },
    kind: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
})

class UsageError extends Error {}

function need(name: 'account' | 'workspace' | 'kind'): string {
  const v = values[name]
  if (!v) throw new UsageError(`--${name} is required`)
  return v
}

async function runtimeList(db: Db) {
  const hosts = await listHosts(db, fleetTimes(config))
  const fleet = hosts.map((h) => ({
    id: h.id,
    address: h.address,
    state: h.state === 'draining' && h.drained ? 'drained' : h.state,
    interns: h.interns,
    capacity: h.capacity,
    free: h.state === 'live' ? h.free : 0,
    last_heartbeat_at: h.heartbeat_at.toISOString(),
  }))
  return { hosts: fleet }
}

async function runtimeDrain(db: Db, hostId: string | undefined) {
  if (!hostId) throw new UsageError('runtime drain needs the host id (see runtime list)')
  if (!(await drainHost(db, hostId))) {
    const known = (await listHosts(db, fleetTimes(config))).find((h) => h.id === hostId)
    throw new Error(known ? `host ${hostId} is ${known.state}: only a live host can be drained` : `no runtime host ${hostId} (see runtime list)`)
  }
  return { host: hostId, state: 'draining' }
}

async function run(db: Db, command: string): Promise<Record<string, unknown>> {
  if (command === 'runtime list') return runtimeList(db)
  if (command.startsWith('runtime drain')) return runtimeDrain(db, positionals[2])
  switch (command) {
    case 'bootstrap':
      return bootstrap(db)
    case 'account create':
      return createAccount(db, { inProgramme: !values['no-programme'], lifecycleWrites: !values['no-lifecycle-writes'], vaultWrites: !values['no-vault-writes'] })
    case 'account vault-writes on':
    case 'account vault-writes off':
      return setVaultWrites(db, { accountId: need('account'), on: command.endsWith(' on') })
    case 'workspace create':
      return createWorkspace(db, { accountId: need('account'), internsEnabled: !values['no-interns'] })
    case 'user create':
      return createUser(db, { workspaceId: need('workspace') })
    case 'key create': {
      const kind = need('kind')
      if (!(ApiKeyKinds as readonly string[]).includes(kind)) throw new UsageError(`--kind must be one of ${ApiKeyKinds.join(', ')}`)
      return createApiKey(db, { kind: kind as ApiKeyKind, workspaceId: need('workspace'), userId: values.user, internId: values.intern })
    }
    default:
      throw new UsageError(command ? `unknown command: ${command}` : 'no command given')
  }
}

function print(result: Record<string, unknown>) {
  if (values.json) {
    process.stdout.write(JSON.stringify(result) + '\n')
    return
  }
  if (Array.isArray(result.hosts)) {
    const rows = result.hosts as Record<string, unknown>[]
    const cols = ['id', 'state', 'interns', 'free', 'capacity', 'address', 'last_heartbeat_at']
    const cells = [cols, ...rows.map((r) => cols.map((c) => String(r[c])))]
    const widths = cols.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)))
    process.stdout.write(cells.map((row) => row.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n')
    if (rows.length === 0) process.stdout.write('No runtime host has joined the fleet.\n')
    return
  }
  const flat = (obj: Record<string, unknown>, prefix = ''): string[] =>
    Object.entries(obj).flatMap(([k, v]) =>
      v && typeof v === 'object' ? flat(v as Record<string, unknown>, `${prefix}${k}.`) : [`${prefix}${k}: ${String(v)}`],
    )
  process.stdout.write(flat(result).join('\n') + '\n')
  if ('key' in result || 'keys' in result) process.stdout.write('Keys are shown only now; store them safely.\n')
}

if (values.help) {
  process.stdout.write(usage + '\n')
  process.exit(0)
}
const config = loadConfigOrExit(CliConfig, 'admin')
const db = createDb({ url: config.DATABASE_URL, poolSize: 2 })
let code = 0
try {
  print(await run(db, positionals.join(' ')))
} catch (err) {
  code = err instanceof UsageError ? 2 : 1
  const message = err instanceof UsageError || isAppError(err) ? err.message : String((err as Error)?.message ?? err)
  if (values.json) process.stdout.write(JSON.stringify({ error: message }) + '\n')
  process.stderr.write(`admin: ${message}\n${err instanceof UsageError ? usage + '\n' : ''}`)
} finally {
  await db.$disconnect()
}
process.exit(code)
