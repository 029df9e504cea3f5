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
  isAppError,
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

async function run(db: Db, command: string): Promise<Record<string, unknown>> {
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
