// The operator CLI as a function of its arguments and its streams: `main.ts` runs it for a person at
// a terminal (npm run -s admin -- …), and the tests run most commands through it in their own process,
// sparing a Node start and a Prisma load per command (about a second each on these machines).
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { writeFileSync } from 'node:fs'
import { hostname, userInfo } from 'node:os'
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
  createKey,
  CreateKeyBody,
  deleteKey,
  getKey,
  listKeys,
  spendFromLedger,
  updateKey,
  UpdateKeyBody,
  ConfigError,
  loadConfig,
  setVaultWrites,
  setIoLogging,
  grantCredits,
  changeMember,
  recordAudit,
  type ApiKeyKind,
  type Db,
} from '@roster/shared'
import { drainHostOrExplain, fleetTimes, FleetDriver, hostCredentialKey, hostsView } from '@roster/shared/fleet'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import {
  slackLinkSummary,
  slackAppsApi,
  slackConfigSummary,
  storeSlackConfigToken,
  forgetSlackConfigToken,
} from '@roster/shared/slack'
import { getArchive, internStatus, listArchives, memberById, workspaceAccount } from '@roster/shared/repositories'
import {
  addMcpServer,
  changeMcpServer,
  listMcpServers,
  removeMcpServer,
  changeSchedule,
  changeTrigger,
  createSchedule,
  createTrigger,
  listSchedules,
  listTriggers,
  listTurns,
  removeSchedule,
  removeTrigger,
  runScheduleNow,
  triggerView,
} from '@roster/shared/interns'
import {
  CreateMcpServerRequest,
  UpdateMcpServerRequest,
  CreateScheduleRequest,
  CreateTriggerRequest,
  UpdateScheduleRequest,
  UpdateTriggerRequest,
} from '@roster/shared'

const usage = `usage: npm run -s admin -- <command> [--json]
  bootstrap [--email E]                             account + workspace + member (its admin, E for signing in) + one key per kind
  account create [--no-programme] [--no-lifecycle-writes] [--no-vault-writes]
  account vault-writes --account ID on|off          allow or refuse (503) vault stores, deletes and copies
  account credits --account ID [--set USD|--add USD|--unlimited]
                                                    an account's credits and what it used; past them its keys answer 402
  workspace create --account ID [--no-interns]
  workspace io-logging --workspace ID on|off [--sampling-rate R]
                                                    keep (a share R of) the workspace's prompts and completions (off by default)
  user create --workspace ID [--email E] [--first-name F] [--last-name L] [--admin]
                                                    a member (how GET /organization/members lists it)
  user disable|enable --user ID                     a disabled member signs in to nothing; their console sessions end
  user role --user ID --admin|--member              the member's role in their account
  key create --kind user|organization|management|intern --workspace ID [--user ID] [--intern ID]
  keys create --workspace ID --name NAME [--limit USD] [--limit-reset daily|weekly|monthly] [--expires-at TIME] [--user ID]
                                                    an API key with a name, limit and expiry, as POST /keys makes one
  keys list --workspace ID [--include-disabled] [--offset N]
  keys get HASH --workspace ID
  keys update HASH --workspace ID [--name NAME] [--limit USD|none] [--limit-reset daily|weekly|monthly|none] [--disable|--enable]
  keys delete HASH --workspace ID                   API processes forget a changed or deleted key within AUTH_CACHE_MS
  runtime list                                      each runtime host: state (live, draining, dead), interns, free room
  runtime drain HOST                                the host takes no new interns; its interns move to others
  archive list [--workspace ID]                     what was kept of deleted interns, newest first
  slack show --intern ID                            an intern's Slack link: its state (and why), the Slack workspace and bot once installed
  slack config-token set --workspace ID             store the workspace's Slack app configuration token, from its refresh token
                                                    on stdin (rotated at once); Slack-linked interns then get apps minted with it
  slack config-token show|forget --workspace ID     its Slack workspace and expiry (never the token), or forget it
  archive export ID --out FILE                      an archive's workspace (a gzipped tar) to FILE, with its configuration and sessions beside it (FILE.json)
  schedules list --intern ID                        an intern's schedules (docs/interns.md, "Work no one types")
  schedules create --intern ID --name N --cron C --prompt P [--timezone TZ] [--session S] [--self-drive] [--missed skip]
                   [--slack-channel C]              its turns' replies posted in a Slack conversation of the intern's app
  schedules update ID --intern ID [--name N] [--cron C] [--timezone TZ] [--prompt P] [--session S|none]
                   [--slack-channel C|none] [--enable|--disable]
  schedules delete|run ID --intern ID               remove one, or run its job now, once
  triggers list --intern ID                         an intern's webhook triggers (their URLs; secrets are shown only when made)
  triggers create --intern ID --name N --prompt P [--session S] [--self-drive] [--slack-channel C]
  triggers update ID --intern ID [--name N] [--prompt P] [--slack-channel C|none] [--enable|--disable] [--rotate-secret]
  triggers delete ID --intern ID
  turns list --intern ID                            the turns its schedules and webhooks fired, newest first, with how each went
  mcp list --intern ID                              the MCP servers its tools come from, with the tools found on each
  mcp add --intern ID --name N --url URL [--header 'Name: value']...
                                                    a credential in a header as {{secret:NAME}}, a secret of the intern's bound to the server's host
  mcp update ID --intern ID [--name N] [--url URL] [--header 'Name: value']... [--enable|--disable]
  mcp remove ID --intern ID
  skills list --intern ID                           its skills (folders under skills/ in its workspace), from its host
  skills install --intern ID --name N --dir PATH    a skill's folder (SKILL.md and the files it uses), in place of any of its name
  skills remove --intern ID --name N
Reads DATABASE_URL. With --json, prints exactly one JSON object.`

const options = {
  json: { type: 'boolean', default: false },
  'no-programme': { type: 'boolean', default: false },
  'no-lifecycle-writes': { type: 'boolean', default: false },
  'no-vault-writes': { type: 'boolean', default: false },
  'no-interns': { type: 'boolean', default: false },
  account: { type: 'string' },
  workspace: { type: 'string' },
  user: { type: 'string' },
  email: { type: 'string' },
  'first-name': { type: 'string' },
  'last-name': { type: 'string' },
  admin: { type: 'boolean', default: false },
  member: { type: 'boolean', default: false },
  intern: { type: 'string' },
  kind: { type: 'string' },
  out: { type: 'string' },
  name: { type: 'string' },
  limit: { type: 'string' },
  'limit-reset': { type: 'string' },
  'expires-at': { type: 'string' },
  'include-disabled': { type: 'boolean', default: false },
  offset: { type: 'string' },
  disable: { type: 'boolean', default: false },
  enable: { type: 'boolean', default: false },
  set: { type: 'string' },
  add: { type: 'string' },
  unlimited: { type: 'boolean', default: false },
  'sampling-rate': { type: 'string' },
  cron: { type: 'string' },
  timezone: { type: 'string' },
  prompt: { type: 'string' },
  session: { type: 'string' },
  'self-drive': { type: 'boolean', default: false },
  missed: { type: 'string' },
  'rotate-secret': { type: 'boolean', default: false },
  'slack-channel': { type: 'string' },
  dir: { type: 'string' },
  url: { type: 'string' },
  header: { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h', default: false },
} satisfies ParseArgsConfig['options']

type Values = ReturnType<typeof parseArgs<{ allowPositionals: true; options: typeof options }>>['values']

/** Where a command reads and writes: the process's own streams, or a test's. */
export interface AdminIo {
  env: NodeJS.ProcessEnv
  stdout(text: string): void
  stderr(text: string): void
  stdin: AsyncIterable<Buffer | string> | Iterable<Buffer | string>
}

/** One command line, parsed, with its settings and streams. */
interface Invocation {
  values: Values
  positionals: string[]
  config: CliConfig
  io: AdminIo
}

class UsageError extends Error {}

function needOf(inv: Invocation, name: 'account' | 'workspace' | 'kind' | 'intern' | 'user'): string {
  const v = inv.values[name]
  if (!v) throw new UsageError(`--${name} is required`)
  return v
}

async function runtimeList(inv: Invocation, db: Db) {
  return { hosts: await hostsView(db, fleetTimes(inv.config)) }
}

async function runtimeDrain(inv: Invocation, db: Db, hostId: string | undefined) {
  if (!hostId) throw new UsageError('runtime drain needs the host id (see runtime list)')
  return drainHostOrExplain(db, fleetTimes(inv.config), hostId)
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

async function archiveList({ values }: Invocation, db: Db) {
  if (values.workspace !== undefined && !UUID.test(values.workspace))
    throw new UsageError('--workspace is a workspace id (a UUID)')
  const archives = await listArchives(db, values.workspace)
  return { archives: archives.map((a) => ({ ...a, archived_at: a.archived_at.toISOString() })) }
}

async function archiveExport({ values }: Invocation, db: Db, id: string | undefined) {
  if (!id || !UUID.test(id)) throw new UsageError('archive export needs the archive id (see archive list)')
  const out = values.out
  if (!out) throw new UsageError('archive export needs --out FILE')
  const archive = await getArchive(db, id)
  if (!archive) throw new Error(`no archive ${id} (see archive list)`)
  writeFileSync(
    `${out}.json`,
    JSON.stringify(
      {
        id: archive.id,
        intern_id: archive.intern_id,
        configuration: archive.configuration,
        sessions: archive.sessions,
      },
      null,
      2,
    ) + '\n',
    { mode: 0o600 },
  )
  if (archive.bytes) writeFileSync(out, archive.bytes, { mode: 0o600 })
  const workspace = archive.bytes
    ? `${out} (${archive.bytes.length} bytes, sha256 ${archive.sha256})`
    : archive.key
      ? `not written: it is the object ${archive.key} in the snapshot bucket (SNAPSHOT_S3_BUCKET)`
      : 'none: no snapshot of its workspace was ever taken'
  return { archive: archive.id, workspace, configuration_and_sessions: `${out}.json` }
}

/** The keys commands: the API's own key operations, in the scope of the workspace named (and its account). */
async function keys(inv: Invocation, db: Db, op: string | undefined): Promise<Record<string, unknown>> {
  const { values, positionals } = inv
  const workspaceId = needOf(inv, 'workspace')
  const accountId = UUID.test(workspaceId) ? await workspaceAccount(db, workspaceId) : undefined
  if (!accountId) throw new Error(`no workspace ${workspaceId}`)
  const scope = { accountId, workspaceId }
  // Offline: no API process hears of the change; each forgets what it cached within AUTH_CACHE_MS.
  const deps = { db, usage: spendFromLedger(db), changed: () => {} }
  const hash = positionals[2]
  const number = (v: string | undefined) => (v === undefined ? undefined : v === 'none' ? null : Number(v))
  const reset = (v: string | undefined) => (v === undefined ? undefined : v === 'none' ? null : v)
  switch (op) {
    case 'create':
      return createKey(
        deps,
        scope,
        bodyOf(CreateKeyBody, {
          name: values.name,
          limit: number(values.limit),
          limit_reset: reset(values['limit-reset']),
          expires_at: values['expires-at'],
          creator_user_id: values.user,
        }),
      )
    case 'list':
      return listKeys(deps, scope, {
        include_disabled: values['include-disabled'] ? 'true' : undefined,
        offset: values.offset === undefined ? undefined : Number(values.offset),
      })
    case 'get':
      return getKey(deps, scope, hash ?? '')
    case 'update':
      if (values.disable && values.enable) throw new UsageError('--disable and --enable are each other’s opposite')
      return updateKey(
        deps,
        scope,
        hash ?? '',
        bodyOf(UpdateKeyBody, {
          name: values.name,
          limit: number(values.limit),
          limit_reset: reset(values['limit-reset']),
          disabled: values.disable ? true : values.enable ? false : undefined,
        }),
      )
    case 'delete':
      return deleteKey(deps, scope, hash ?? '')
    default:
      throw new UsageError(`keys ${op ?? ''}: the keys commands are create, list, get, update and delete`)
  }
}

/** Parses a command's options as the API's body schema would; a refusal names the option. */
function bodyOf<T>(
  schema: {
    safeParse(
      v: unknown,
    ): { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } }
  },
  v: unknown,
): T {
  const parsed = schema.safeParse(v)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    throw new UsageError(`--${String(issue.path[0] ?? 'input').replace(/_/g, '-')} ${issue.message}`)
  }
  return parsed.data
}

/**
 * An intern's standing work, as the API's routes do it (the same engine, offline: a schedule's
 * scheduler is armed when a worker's relay next polls the outbox, within a second or so).
 */
async function internWork(inv: Invocation, db: Db, what: string, op: string | undefined) {
  const { values, positionals, config } = inv
  const internId = needOf(inv, 'intern')
  const status = UUID.test(internId) ? await internStatus(db, internId) : undefined
  if (!status) throw new Error(`no intern ${internId}`)
  const id = positionals[2] ?? ''
  const session = values.session === 'none' ? null : values.session
  const slackChannel = values['slack-channel'] === 'none' ? null : values['slack-channel']
  const mode = values['self-drive'] ? 'self-drive' : undefined
  const enabled = values.disable ? false : values.enable ? true : undefined
  if (values.disable && values.enable) throw new UsageError('--disable and --enable are each other’s opposite')
  const cron = { seconds: false }
  const base = config.PUBLIC_URL ?? 'http://localhost:3000'
  const headers: Record<string, string> = {}
  for (const h of values.header ?? []) {
    const at = h.indexOf(':')
    if (at < 1) throw new UsageError(`--header takes 'Name: value' (got ${JSON.stringify(h)})`)
    headers[h.slice(0, at).trim()] = h.slice(at + 1).trim()
  }
  const shown = (t: Parameters<typeof triggerView>[1], secret?: string) => triggerView(base, t, secret)
  /** A schedule's fields as the options give them (checked as the API's body is). */
  const scheduleOptions = {
    name: values.name,
    cron: values.cron,
    timezone: values.timezone,
    prompt: values.prompt,
    session_id: session,
    approval_mode: mode,
    slack_channel: slackChannel,
    missed: values.missed,
  }
  switch (`${what} ${op ?? ''}`) {
    case 'schedules list':
      return { schedules: await listSchedules(db, internId) }
    case 'schedules create':
      return createSchedule(db, internId, bodyOf(CreateScheduleRequest, scheduleOptions), cron)
    case 'schedules update':
      return changeSchedule(db, internId, id, bodyOf(UpdateScheduleRequest, { ...scheduleOptions, enabled }), cron)
    case 'schedules delete':
      return removeSchedule(db, internId, id)
    case 'schedules run':
      return runScheduleNow(db, { id: internId, status }, id, config.INTERN_TURN_QUEUE)
    case 'triggers list':
      return { triggers: (await listTriggers(db, internId)).map((t) => shown(t)) }
    case 'triggers create': {
      const made = await createTrigger(
        db,
        config.VAULT_MASTER_KEY,
        internId,
        bodyOf(CreateTriggerRequest, {
          name: values.name,
          prompt: values.prompt,
          session_id: session,
          approval_mode: mode,
          slack_channel: slackChannel,
        }),
      )
      return shown(made.row, made.secret)
    }
    case 'triggers update': {
      const changed = await changeTrigger(
        db,
        config.VAULT_MASTER_KEY,
        internId,
        id,
        bodyOf(UpdateTriggerRequest, {
          name: values.name,
          prompt: values.prompt,
          session_id: session,
          approval_mode: mode,
          slack_channel: slackChannel,
          enabled,
          rotate_secret: values['rotate-secret'] || undefined,
        }),
      )
      return shown(changed.row, changed.secret)
    }
    case 'triggers delete':
      return removeTrigger(db, internId, id)
    case 'turns list':
      return { turns: (await listTurns(db, internId, { limit: 100 })).data }
    case 'mcp list':
      return { mcp_servers: await listMcpServers(db, internId) }
    case 'mcp add':
      return addMcpServer(db, internId, bodyOf(CreateMcpServerRequest, { name: values.name, url: values.url, headers }))
    case 'mcp update':
      return changeMcpServer(
        db,
        internId,
        id,
        bodyOf(UpdateMcpServerRequest, {
          name: values.name,
          url: values.url,
          headers: values.header ? headers : undefined,
          enabled,
        }),
      )
    case 'mcp remove':
      return removeMcpServer(db, internId, id)
    default:
      throw new UsageError(
        `${what} ${op ?? ''}: the commands are schedules list|create|update|delete|run, triggers list|create|update|delete, turns list, mcp list|add|update|remove`,
      )
  }
}

/** The files of a local folder, as a skill's (at most 100, each path relative to it). */
function folderFiles(dir: string): { path: string; content_base64: string }[] {
  const files: { path: string; content_base64: string }[] = []
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile()) {
        if (files.length >= 100) throw new UsageError(`${dir} holds more than 100 files; a skill holds at most 100`)
        files.push({ path: relative(dir, path), content_base64: readFileSync(path).toString('base64') })
      }
    }
  }
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`--dir ${dir} is not a folder`)
  walk(dir)
  return files
}

/** An intern's skills, on its host (they are folders of its workspace): the CLI calls the host as a worker does. */
async function skills(inv: Invocation, db: Db, op: string | undefined): Promise<Record<string, unknown>> {
  const { values, config } = inv
  const internId = needOf(inv, 'intern')
  if (!config.VAULT_MASTER_KEY)
    throw new UsageError('skills needs VAULT_MASTER_KEY (the API’s): hosts are called with credentials derived from it')
  const driver = new FleetDriver(db, hostCredentialKey(config.VAULT_MASTER_KEY))
  try {
    const at = UUID.test(internId) ? await driver.placement(internId) : undefined
    if (!at || at.status !== 'running') throw new Error(`intern ${internId} is not running: its skills are on its host`)
    switch (op) {
      case 'list': {
        const found = await driver.skills(at, internId)
        return { skills: found.skills, problems: found.problems }
      }
      case 'install': {
        const name = values.name
        if (!name) throw new UsageError('--name is required')
        if (!values.dir) throw new UsageError('--dir is required')
        return await driver.installSkill(at, internId, name, { files: folderFiles(values.dir) })
      }
      case 'remove': {
        const name = values.name
        if (!name) throw new UsageError('--name is required')
        await driver.removeSkill(at, internId, name)
        return { name, deleted: true }
      }
      default:
        throw new UsageError(`skills ${op ?? ''}: the skills commands are list, install and remove`)
    }
  } finally {
    await driver.close()
  }
}

/** A workspace's Slack app configuration token: the refresh token comes on stdin, never in argv (ps, history). */
async function slackConfigToken(
  { config, io }: Invocation,
  db: Db,
  op: string,
  workspaceId: string,
): Promise<Record<string, unknown>> {
  if (!UUID.test(workspaceId)) throw new Error(`no workspace ${workspaceId}`)
  if (op === 'show') {
    const stored = await slackConfigSummary(db, workspaceId)
    if (!stored) throw new Error(`workspace ${workspaceId} holds no Slack app configuration token`)
    return { ...stored }
  }
  if (op === 'forget') return { workspace_id: workspaceId, forgotten: await forgetSlackConfigToken(db, workspaceId) }
  if (!config.VAULT_MASTER_KEY)
    throw new UsageError('slack config-token set needs VAULT_MASTER_KEY (the API’s) to seal it')
  const chunks: Buffer[] = []
  for await (const c of io.stdin) chunks.push(c as Buffer)
  const refreshToken = Buffer.concat(chunks).toString('utf8').trim()
  if (!/^xoxe-\S+$/.test(refreshToken))
    throw new UsageError('give the refresh token (xoxe-…) Slack issued with the app configuration token on stdin')
  const stored = await storeSlackConfigToken(
    { db, masterKey: config.VAULT_MASTER_KEY, api: slackAppsApi(config.SLACK_API_URL) },
    workspaceId,
    refreshToken,
  )
  return { ...stored }
}

async function run(inv: Invocation, db: Db): Promise<Record<string, unknown>> {
  const { values, positionals } = inv
  const command = positionals.join(' ')
  const need = (name: Parameters<typeof needOf>[1]) => needOf(inv, name)
  if (positionals[0] === 'keys') return keys(inv, db, positionals[1])
  if (positionals[0] === 'skills') return skills(inv, db, positionals[1])
  if (['schedules', 'triggers', 'turns', 'mcp'].includes(positionals[0] ?? ''))
    return internWork(inv, db, positionals[0]!, positionals[1])
  if (command === 'archive list') return archiveList(inv, db)
  if (command.startsWith('archive export')) return archiveExport(inv, db, positionals[2])
  if (command === 'runtime list') return runtimeList(inv, db)
  if (command.startsWith('runtime drain')) return runtimeDrain(inv, db, positionals[2])
  switch (command) {
    case 'bootstrap':
      return bootstrap(db, { email: values.email })
    case 'account create':
      return createAccount(db, {
        inProgramme: !values['no-programme'],
        lifecycleWrites: !values['no-lifecycle-writes'],
        vaultWrites: !values['no-vault-writes'],
      })
    case 'account vault-writes on':
    case 'account vault-writes off':
      return setVaultWrites(db, { accountId: need('account'), on: command.endsWith(' on') })
    case 'account credits': {
      const accountId = need('account')
      if (!UUID.test(accountId)) throw new Error(`no account ${accountId}`)
      const given = [values.set !== undefined, values.add !== undefined, values.unlimited].filter(Boolean).length
      if (given > 1) throw new UsageError('give one of --set, --add and --unlimited')
      const usd = (v: string) => (/^\s*$/.test(v) ? NaN : Number(v))
      return grantCredits(
        db,
        accountId,
        values.set !== undefined
          ? { set: usd(values.set) }
          : values.add !== undefined
            ? { add: usd(values.add) }
            : values.unlimited
              ? { unlimited: true }
              : null,
      )
    }
    case 'workspace io-logging on':
    case 'workspace io-logging off': {
      const workspaceId = need('workspace')
      if (!UUID.test(workspaceId)) throw new Error(`no workspace ${workspaceId}`)
      const rate = values['sampling-rate']
      return setIoLogging(db, {
        workspaceId,
        on: command.endsWith(' on'),
        rate: rate === undefined ? undefined : Number(rate),
      })
    }
    case 'workspace create':
      return createWorkspace(db, { accountId: need('account'), internsEnabled: !values['no-interns'] })
    case 'user create':
      return createUser(db, {
        workspaceId: need('workspace'),
        email: values.email,
        firstName: values['first-name'],
        lastName: values['last-name'],
        role: values.admin ? 'org:admin' : 'org:member',
      })
    case 'user disable':
    case 'user enable':
    case 'user role': {
      const userId = need('user')
      const member = UUID.test(userId) ? await memberById(db, userId) : undefined
      if (!member) throw new Error(`no member ${userId}`)
      if (command === 'user role' && values.admin === values.member)
        throw new UsageError('give one of --admin and --member')
      return changeMember(
        db,
        member.account_id,
        userId,
        command === 'user role'
          ? { role: values.admin ? 'org:admin' : 'org:member' }
          : { disabled: command === 'user disable' },
      )
    }
    case 'key create': {
      const kind = need('kind')
      if (!(ApiKeyKinds as readonly string[]).includes(kind))
        throw new UsageError(`--kind must be one of ${ApiKeyKinds.join(', ')}`)
      return createApiKey(db, {
        kind: kind as ApiKeyKind,
        workspaceId: need('workspace'),
        userId: values.user,
        internId: values.intern,
      })
    }
    case 'slack show':
      return slackLinkSummary(db, need('intern'))
    case 'slack config-token set':
    case 'slack config-token show':
    case 'slack config-token forget':
      return slackConfigToken(inv, db, command.split(' ')[2]!, need('workspace'))
    default:
      throw new UsageError(command ? `unknown command: ${command}` : 'no command given')
  }
}

function print({ values, io }: Invocation, result: Record<string, unknown>) {
  if (values.json) {
    io.stdout(JSON.stringify(result) + '\n')
    return
  }
  const table = (rows: Record<string, unknown>[], cols: string[], none: string) => {
    const cells = [cols, ...rows.map((r) => cols.map((c) => String(r[c])))]
    const widths = cols.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)))
    io.stdout(
      cells
        .map((row) =>
          row
            .map((c, i) => c.padEnd(widths[i]!))
            .join('  ')
            .trimEnd(),
        )
        .join('\n') + '\n',
    )
    if (rows.length === 0) io.stdout(none + '\n')
  }
  if (Array.isArray(result.hosts))
    return table(
      result.hosts,
      ['id', 'state', 'interns', 'free', 'capacity', 'address', 'last_heartbeat_at'],
      'No runtime host has joined the fleet.',
    )
  if (Array.isArray(result.data))
    return table(
      result.data as Record<string, unknown>[],
      ['hash', 'name', 'label', 'disabled', 'limit', 'limit_reset', 'usage', 'expires_at'],
      'No API key.',
    )
  if (Array.isArray(result.schedules))
    return table(
      result.schedules,
      ['id', 'name', 'cron', 'timezone', 'enabled', 'missed', 'next_fire_at', 'last_fire_at'],
      'No schedule.',
    )
  if (Array.isArray(result.triggers))
    return table(result.triggers, ['id', 'name', 'enabled', 'approval_mode', 'url'], 'No webhook trigger.')
  if (Array.isArray(result.turns))
    return table(
      result.turns,
      ['id', 'source', 'state', 'scheduled_for', 'created_at', 'ended_at', 'reason'],
      'No turn has been fired.',
    )
  if (Array.isArray(result.skills)) return table(result.skills, ['name', 'description'], 'No skill.')
  if (Array.isArray(result.mcp_servers))
    return table(
      (result.mcp_servers as Record<string, unknown>[]).map((m) => ({
        ...m,
        tools: Array.isArray(m.tools) ? (m.tools as { name: string }[]).map((t) => t.name).join(',') : 'not yet',
      })),
      ['id', 'name', 'enabled', 'url', 'tools', 'tools_error'],
      'No MCP server.',
    )
  if (Array.isArray(result.archives))
    return table(
      result.archives,
      ['id', 'name', 'intern_id', 'workspace_id', 'sessions', 'workspace_bytes', 'archived_at'],
      'No archive.',
    )
  const flat = (obj: Record<string, unknown>, prefix = ''): string[] =>
    Object.entries(obj).flatMap(([k, v]) =>
      v && typeof v === 'object'
        ? flat(v as Record<string, unknown>, `${prefix}${k}.`)
        : [`${prefix}${k}: ${String(v)}`],
    )
  io.stdout(flat(result).join('\n') + '\n')
  if ('key' in result || 'keys' in result) io.stdout('Keys are shown only now; store them safely.\n')
  if ('secret' in result) io.stdout('The secret is shown only now; give it to the sender, store it safely.\n')
}

/**
 * What a database that cannot be used means for the person at the terminal (the client's own error
 * names neither the setting nor the fix); undefined for any other error.
 */
function databaseTrouble(err: unknown, url: string): string | undefined {
  const text = String((err as Error)?.message ?? err)
  let where: URL
  try {
    where = new URL(url)
  } catch {
    return undefined
  }
  const name = where.pathname.slice(1) || '(none)'
  const host = where.host
  if (/does not exist on the database server|database ".*" does not exist/.test(text))
    return `the database ${name} does not exist on ${host}: the admin CLI must use the database npm start uses (set DATABASE_URL as npm start has it; its default is postgresql://postgres@127.0.0.1:5432/roster, made by npm start's first run)`
  if (/Can't reach database server|ECONNREFUSED|ENOTFOUND|ETIMEDOUT/.test(text))
    return `the database server at ${host} cannot be reached: start PostgreSQL there, or set DATABASE_URL to the database npm start uses`
  if (/authentication failed|password authentication/i.test(text))
    return `the database server at ${host} refused the credentials in DATABASE_URL`
  return undefined
}

/** The governance commands, as the audit log names them (docs/audit.md); the rest change no governance. */
const AUDITED_COMMANDS: Record<string, { action: string; target: string }> = {
  bootstrap: { action: 'account.create', target: 'account' },
  'account create': { action: 'account.create', target: 'account' },
  'account vault-writes on': { action: 'account.update', target: 'account' },
  'account vault-writes off': { action: 'account.update', target: 'account' },
  'account credits': { action: 'account.credits', target: 'account' },
  'workspace create': { action: 'workspace.create', target: 'workspace' },
  'workspace io-logging on': { action: 'workspace.update', target: 'workspace' },
  'workspace io-logging off': { action: 'workspace.update', target: 'workspace' },
  'user create': { action: 'member.create', target: 'member' },
  'user disable': { action: 'member.update', target: 'member' },
  'user enable': { action: 'member.update', target: 'member' },
  'user role': { action: 'member.update', target: 'member' },
  'key create': { action: 'key.create', target: 'key' },
  'keys create': { action: 'key.create', target: 'key' },
  'keys update': { action: 'key.update', target: 'key' },
  'keys delete': { action: 'key.delete', target: 'key' },
  'slack config-token set': { action: 'slack_config_token.set', target: 'workspace' },
  'slack config-token forget': { action: 'slack_config_token.forget', target: 'workspace' },
}

/** What a changing command's target was before it (a key, a member), where it can be read. */
async function auditedBefore(inv: Invocation, db: Db, command: string): Promise<unknown> {
  const { values, positionals } = inv
  try {
    if (command.startsWith('keys update ') || command.startsWith('keys delete ')) {
      const accountId =
        values.workspace && UUID.test(values.workspace) ? await workspaceAccount(db, values.workspace) : undefined
      if (accountId)
        return (
          await getKey(
            { db, usage: spendFromLedger(db), changed: () => {} },
            { accountId, workspaceId: values.workspace! },
            positionals[2] ?? '',
          )
        ).data
    }
    if (command.startsWith('user ') && values.user && UUID.test(values.user)) return await memberById(db, values.user)
  } catch {
    // unreadable: the command will say why
  }
  return undefined
}

/** Writes a governance command's event: the CLI as the actor (the OS user at this host). */
async function auditCommand(
  inv: Invocation,
  db: Db,
  command: string,
  before: unknown,
  result: Record<string, unknown>,
) {
  const { values, positionals } = inv
  const entry = AUDITED_COMMANDS[command] ?? AUDITED_COMMANDS[positionals.slice(0, 2).join(' ')]
  if (!entry) return
  if (command === 'account credits' && values.set === undefined && values.add === undefined && !values.unlimited) return
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined)
  const data = (result.data ?? {}) as Record<string, unknown>
  const workspaceId = values.workspace ?? str(result.workspace_id)
  const accountId =
    (values.account && UUID.test(values.account) ? values.account : undefined) ??
    str(result.account_id) ??
    (workspaceId && UUID.test(workspaceId) ? await workspaceAccount(db, workspaceId) : undefined) ??
    (values.user && UUID.test(values.user) ? (await memberById(db, values.user))?.account_id : undefined)
  if (!accountId) return
  const targetId =
    entry.target === 'key'
      ? (positionals[2] ?? str(data.hash) ?? str(result.key_id) ?? null)
      : entry.target === 'member'
        ? (values.user ?? str(result.user_id) ?? null)
        : entry.target === 'workspace'
          ? (workspaceId ?? null)
          : accountId
  let who: string
  try {
    who = `${userInfo().username}@${hostname()}`
  } catch {
    // no such user (a container's numeric uid): the host alone
    who = `uid ${process.getuid?.() ?? '?'}@${hostname()}`
  }
  await recordAudit(db, {
    accountId,
    actorType: 'cli',
    actorId: null,
    actorLabel: who,
    via: 'cli',
    action: entry.action,
    targetType: entry.target,
    targetId,
    before: before ?? null,
    after: command.startsWith('keys delete') ? null : result,
    request: {
      command,
      options: Object.fromEntries(
        Object.entries(values).filter(([k, v]) => v !== undefined && v !== false && k !== 'json'),
      ),
    },
    ip: null,
  })
}

/** Runs one command line; resolves to the process's exit code (0, 1 for a failure, 2 for a usage error, 78 for bad settings). */
export async function runAdmin(argv: string[], io: AdminIo): Promise<number> {
  let parsed: { values: Values; positionals: string[] }
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options })
  } catch (err) {
    io.stderr(`admin: ${(err as Error).message}\n${usage}\n`)
    return 2
  }
  if (parsed.values.help) {
    io.stdout(usage + '\n')
    return 0
  }
  let config: CliConfig
  try {
    config = loadConfig(CliConfig, io.env)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    io.stderr(`admin: ${err.message}\n`)
    return 78 // EX_CONFIG
  }
  const inv: Invocation = { ...parsed, config, io }
  const db = createDb({ url: config.DATABASE_URL, poolSize: 2 })
  try {
    const command = inv.positionals.join(' ')
    const before = await auditedBefore(inv, db, command)
    const result = await run(inv, db)
    await auditCommand(inv, db, command, before, result)
    print(inv, result)
    return 0
  } catch (err) {
    const message =
      err instanceof UsageError || isAppError(err)
        ? err.message
        : (databaseTrouble(err, config.DATABASE_URL) ?? String((err as Error)?.message ?? err))
    if (inv.values.json) io.stdout(JSON.stringify({ error: message }) + '\n')
    io.stderr(`admin: ${message}\n${err instanceof UsageError ? usage + '\n' : ''}`)
    return err instanceof UsageError ? 2 : 1
  } finally {
    await db.$disconnect()
  }
}

/** One command line run with its output kept, as a process's would be: for callers that read it (the tests). */
export async function runAdminCaptured(
  argv: string[],
  env: NodeJS.ProcessEnv,
  stdin: AdminIo['stdin'] = [],
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await runAdmin(argv, {
    env,
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    stdin,
  })
  return { code, stdout, stderr }
}
