import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { generateSync } from 'json-schema-faker'
import { InternLifecycleError } from '@roster/shared'
import { makeInternKey, makeTenant, type Tenant, useTestTenant } from '@roster/testing'
import { buildTestApp } from './helpers.js'

// Every operation of the served OpenAPI document under generated requests: path parameters (own,
// another tenant's, unknown and odd ones), query parameters, headers (each key kind, regional
// hosts), bodies generated from the operation's own schema and then spoiled (NUL characters, lone
// surrogates, nesting 20,000 deep, other JSON). Never a 5xx; every refusal in the documented body
// (InternLifecycleError on intern routes, the standard envelope elsewhere); a refused request
// writes nothing.
const env = useTestTenant()
let mine: Tenant
let theirs: Tenant
let sut: Awaited<ReturnType<typeof buildTestApp>>
let doc: any
const ids: Record<'mine' | 'theirs', { intern: string; preset: string; key: string }> = {
  mine: { intern: '', preset: '', key: '' },
  theirs: { intern: '', preset: '', key: '' },
}
let internKey = ''

beforeAll(async () => {
  ;[mine, theirs] = [await makeTenant(env.t.db), await makeTenant(env.t.db)]
  sut = await buildTestApp(env.t.db, { INTERN_LIMIT_PER_MEMBER: '100000', REGIONAL_HOSTS: 'eu.roster.test' })
  for (const [who, tenant] of [
    ['mine', mine],
    ['theirs', theirs],
  ] as const) {
    const intern = await sut.inject({
      method: 'POST',
      url: '/api/v1/interns',
      headers: { authorization: `Bearer ${tenant.keys.user}`, 'content-type': 'application/json' },
      payload: { name: `seed-${who}` },
    })
    ids[who].intern = intern.json().id
    ids[who].preset = `seed-${who}`
    const preset = await sut.inject({
      method: 'POST',
      url: `/api/v1/presets/seed-${who}/responses`,
      headers: { authorization: `Bearer ${tenant.keys.management}`, 'content-type': 'application/json' },
      payload: { model: 'a/b', temperature: 0.5 },
    })
    expect(preset.statusCode).toBe(200)
    const key = await sut.inject({
      method: 'POST',
      url: '/api/v1/keys',
      headers: { authorization: `Bearer ${tenant.keys.management}`, 'content-type': 'application/json' },
      payload: { name: `seed-${who}`, limit: 1 },
    })
    expect(key.statusCode).toBe(201)
    ids[who].key = key.json().data.hash
  }
  internKey = await makeInternKey(env.t.db, mine.workspaceId, ids.mine.intern)
  doc = (await sut.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json()
})
afterAll(async () => {
  await sut?.closeAll()
})

interface Operation {
  method: string
  path: string
  id: string
  params: { name: string; in: string; schema: any; required?: boolean }[]
  body?: { types: string[]; schema: any }
}
const operations = (): Operation[] =>
  Object.entries(doc.paths).flatMap(([path, ops]: [string, any]) =>
    Object.entries(ops).map(([method, op]: [string, any]) => ({
      method: method.toUpperCase(),
      path,
      id: op.operationId,
      params: op.parameters ?? [],
      body: op.requestBody
        ? { types: Object.keys(op.requestBody.content), schema: Object.values<any>(op.requestBody.content)[0].schema }
        : undefined,
    })),
  )

// Path segments, raw (already encoded as a client might send them): real ids, and odd ones.
const ODD_SEGMENTS = [
  '%ff',
  '%00',
  '%ed%a0%80',
  'x'.repeat(600),
  '..',
  '%2F',
  'nope',
  '00000000-0000-0000-0000-000000000000',
  '%F0%9F%98%80',
  'a%20b',
]
function segment(name: string, op: Operation): fc.Arbitrary<string> {
  // The event stream stays open for a visible intern, so it is driven with refusals only.
  const events = op.id === 'streamInternEvents'
  const own = events
    ? []
    : name === 'internId'
      ? [ids.mine.intern]
      : name === 'slug'
        ? [ids.mine.preset, 'fresh-slug']
        : name === 'hash'
          ? [ids.mine.key]
          : []
  const real =
    name === 'internId'
      ? events
        ? [crypto.randomUUID()]
        : [ids.theirs.intern, crypto.randomUUID()]
      : name === 'slug'
        ? [ids.theirs.preset]
        : name === 'hash'
          ? [ids.theirs.key, 'ab'.repeat(32)]
          : name === 'version'
            ? ['1', '2', '0', '99999999999']
            : name === 'name'
              ? ['github_token', 'copy', 'a__b', 'GitHub-Token']
              : ['roster-sim', 'chat']
  return fc.oneof(
    fc.constantFrom(...own, ...real),
    fc.constantFrom(...ODD_SEGMENTS),
    fc.string({ maxLength: 12 }).map(encodeURIComponent),
  )
}
const queryValue = fc.oneof(
  fc.constantFrom('1', '0', '-5', '100', '501', 'abc', '%00', '%ff', '%ed%a0%80', 'running', 'x'.repeat(300)),
  fc.string({ maxLength: 8 }).map(encodeURIComponent),
)

const KEYS = ['user', 'organization', 'management', 'theirs', 'intern', 'nope', 'none'] as const
function authorization(kind: (typeof KEYS)[number]): string | undefined {
  if (kind === 'none') return undefined
  if (kind === 'nope') return 'Bearer sk-roster-not-a-key'
  if (kind === 'theirs') return `Bearer ${theirs.keys.user}`
  if (kind === 'intern') return `Bearer ${internKey}`
  return `Bearer ${mine.keys[kind]}`
}

/** JSON from the operation's own schema (strings and lists kept short), then maybe spoiled. */
function jsonBody(schema: any): fc.Arbitrary<string | undefined> {
  const from = JSON.parse(
    JSON.stringify({ ...schema, components: doc.components }, (k, v) =>
      k === 'maxLength' ? Math.min(v, 40) : k === 'maxItems' ? Math.min(v, 3) : v,
    ),
  )
  const generated = fc
    .integer({ min: 1, max: 2 ** 31 - 1 })
    .map((seed) => generateSync(from, { seed, optionalsProbability: 0.6, maxDepth: 5, maxDefaultItems: 2 }))
  const spoiled = fc
    .tuple(generated, fc.constantFrom('nul', 'surrogate', 'deep', 'key'))
    .map(([value, how]) => spoil(value, how))
  return fc.oneof(
    generated.map((v) => JSON.stringify(v)),
    spoiled,
    fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
    fc.constantFrom(undefined, '', '{', 'null', '[]', '"\\ud800"'),
  )
}
/** A value with one string given a NUL or a lone surrogate, a key made of one, or a branch 20,000 deep. */
function spoil(value: unknown, how: string): string {
  const deep = '['.repeat(20_000) + ']'.repeat(20_000)
  if (how === 'deep')
    return typeof value === 'object' && value && !Array.isArray(value)
      ? JSON.stringify({ ...value, x: 0 }).replace('"x":0', `"x":${deep}`)
      : deep
  const bad = how === 'nul' ? '\\u0000' : '\\ud800'
  if (how === 'key')
    return typeof value === 'object' && value && !Array.isArray(value)
      ? JSON.stringify({ ...value, k: 0 }).replace('"k"', `"k${bad}"`)
      : `{"${bad}":1}`
  const text = JSON.stringify(value)
  const at = text.indexOf('"')
  return at >= 0
    ? `${text.slice(0, at + 1)}${bad}${text.slice(at + 1)}`
    : JSON.stringify({ name: `a${bad}` }).replace('\\\\u', '\\u')
}

function request(op: Operation) {
  const pathParams = op.params.filter((p) => p.in === 'path')
  const queryParams = op.params.filter((p) => p.in === 'query')
  return fc.record({
    path: fc
      .tuple(...pathParams.map((p) => segment(p.name, op)))
      .map((values) => pathParams.reduce((url, p, i) => url.replace(`{${p.name}}`, values[i]!), op.path)),
    query: fc
      .subarray(queryParams)
      .chain((chosen) =>
        fc
          .tuple(...chosen.map(() => queryValue))
          .map((values) => chosen.map((p, i) => `${p.name}=${values[i]}`).join('&')),
      ),
    key: fc.constantFrom(...KEYS, 'user', 'management', 'user'),
    host: fc.constantFrom('localhost', 'eu.roster.test'),
    idempotency: fc.option(fc.constantFrom('k-1', 'k-2', '%00', 'x'.repeat(300))),
    body: !op.body
      ? fc.constant(undefined)
      : op.body.types.includes('application/json')
        ? jsonBody(op.body.schema)
        : fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
    contentType: fc.constantFrom(
      ...(op.body?.types ?? ['application/json']),
      'application/json',
      'text/plain',
      'application/x-www-form-urlencoded',
    ),
  })
}

/** Rows a refused request must not have touched: counts, and the latest change of what can be updated. */
async function snapshot() {
  const [row] = await env.t.db.$queryRaw<Record<string, unknown>[]>`
    SELECT (SELECT count(*) FROM interns) AS interns, (SELECT max(updated_at) FROM interns) AS interns_changed,
           (SELECT count(*) FROM vaults) AS vaults, (SELECT count(*) FROM vault_secrets) AS secrets,
           (SELECT count(*) FROM outbox) AS outbox, (SELECT count(*) FROM intern_icons) AS icons, (SELECT count(*) FROM idempotency_records) AS idempotency,
           (SELECT count(*) FROM presets) AS presets, (SELECT max(updated_at) FROM presets) AS presets_changed,
           (SELECT count(*) FROM api_keys) AS keys, (SELECT max(updated_at) FROM api_keys) AS keys_changed,
           (SELECT count(*) FROM users) AS users, (SELECT count(*) FROM generation_feedback) AS feedback,
           (SELECT count(*) FROM preset_versions) AS versions, (SELECT count(*) FROM workspaces) AS workspaces,
           (SELECT max(updated_at) FROM workspaces) AS workspaces_changed, (SELECT count(*) FROM workspace_members) AS members,
           (SELECT count(*) FROM workspace_budgets) AS budgets, (SELECT max(updated_at) FROM workspace_budgets) AS budgets_changed,
           (SELECT count(*) FROM guardrails) AS guardrails, (SELECT max(updated_at) FROM guardrails) AS guardrails_changed,
           (SELECT count(*) FROM guardrail_key_assignments) AS key_assignments,
           (SELECT count(*) FROM guardrail_member_assignments) AS member_assignments,
           (SELECT count(*) FROM byok_keys) AS byok_keys, (SELECT max(updated_at) FROM byok_keys) AS byok_changed,
           (SELECT count(*) FROM generation_rollups) AS rollups,
           (SELECT count(*) FROM observability_destinations) AS destinations,
           (SELECT count(*) FROM workspace_files) AS files,
           (SELECT count(*) FROM intern_schedules) AS schedules, (SELECT max(updated_at) FROM intern_schedules) AS schedules_changed,
           (SELECT count(*) FROM intern_triggers) AS triggers, (SELECT max(updated_at) FROM intern_triggers) AS triggers_changed,
           (SELECT count(*) FROM intern_turns) AS turns,
           (SELECT count(*) FROM intern_mcp_servers) AS mcp_servers, (SELECT max(updated_at) FROM intern_mcp_servers) AS mcp_changed,
           (SELECT max(updated_at) FROM observability_destinations) AS destinations_changed`
  return JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? Number(v) : v))
}

describe('every operation of the OpenAPI document, under generated requests', () => {
  it('lists the operations it drives', () => {
    expect(
      operations()
        .map((o) => o.id)
        .sort(),
    ).toEqual(
      [
        'createIntern',
        'listInterns',
        'streamInternEvents',
        'streamInternsEvents',
        'listInternSessions',
        'getInternSession',
        'listOpenQuestions',
        'listGenerations',
        'getKeyLimits',
        'getInternIcon',
        'setInternIcon',
        'deleteInternIcon',
        'updateIntern',
        'deleteIntern',
        'getIntern',
        'provisionIntern',
        'suspendIntern',
        'listModels',
        'listEndpoints',
        'createResponse',
        'createPresetsResponses',
        'createPresetsChatCompletions',
        'createPresetsMessages',
        'listPresets',
        'getPreset',
        'listPresetVersions',
        'getPresetVersion',
        'storeVaultSecret',
        'deleteVaultSecret',
        'listVaultSecrets',
        'storeInternVaultSecret',
        'deleteInternVaultSecret',
        'listInternVaultSecrets',
        'copyVaultSecretsToIntern',
        'listInternEffectiveSecrets',
        'createInternChatCompletion',
        'sendChatCompletionRequest',
        'createMessage',
        'countMessageTokens',
        'compactResponse',
        'createKeys',
        'list',
        'getKey',
        'updateKeys',
        'deleteKeys',
        'getCurrentKey',
        'listModelsUser',
        'listModelsCount',
        'getModel',
        'listEndpointsZdr',
        'listProviders',
        'getGeneration',
        'listGenerationContent',
        'submitFeedback',
        'getCredits',
        'listWorkspaces',
        'createWorkspace',
        'getWorkspace',
        'updateWorkspace',
        'deleteWorkspace',
        'listWorkspaceMembers',
        'bulkAddWorkspaceMembers',
        'bulkRemoveWorkspaceMembers',
        'listWorkspaceBudgets',
        'getWorkspaceBudget',
        'setWorkspaceBudget',
        'deleteWorkspaceBudget',
        'listGuardrails',
        'createGuardrail',
        'getGuardrail',
        'updateGuardrail',
        'deleteGuardrail',
        'listKeyAssignments',
        'listMemberAssignments',
        'listGuardrailKeyAssignments',
        'bulkAssignKeys',
        'bulkUnassignKeys',
        'listGuardrailMemberAssignments',
        'bulkAssignMembers',
        'bulkUnassignMembers',
        'listByokKeys',
        'createByokKey',
        'getByokKey',
        'updateByokKey',
        'deleteByokKey',
        'getUserActivity',
        'getAnalyticsMeta',
        'queryAnalytics',
        'listObservabilityDestinations',
        'createObservabilityDestination',
        'getObservabilityDestination',
        'updateObservabilityDestination',
        'deleteObservabilityDestination',
        'listOrganizationMembers',
        'getOrganizationMember',
        'addOrganizationMember',
        'updateOrganizationMember',
        'listAuditEvents',
        'getInternSlackLink',
        'getInternSlackManifest',
        'installInternSlackApp',
        'uploadFile',
        'listFiles',
        'getFileMetadata',
        'downloadFileContent',
        'deleteFile',
        'listInternSchedules',
        'createInternSchedule',
        'getInternSchedule',
        'updateInternSchedule',
        'deleteInternSchedule',
        'runInternSchedule',
        'listInternTriggers',
        'createInternTrigger',
        'getInternTrigger',
        'updateInternTrigger',
        'deleteInternTrigger',
        'listInternTurns',
        'getInternTurn',
        'listInternMcpServers',
        'createInternMcpServer',
        'getInternMcpServer',
        'updateInternMcpServer',
        'deleteInternMcpServer',
        'listInternSkills',
        'installInternSkill',
        'deleteInternSkill',
      ].sort(),
    )
  })

  it('never answers 5xx, refuses in the documented body, and writes nothing when it refuses', async () => {
    const all = fc.constantFrom(...operations()).chain((op) => request(op).map((r) => ({ op, ...r })))
    await fc.assert(
      fc.asyncProperty(all, async ({ op, path, query, key, host, idempotency, body, contentType }) => {
        const headers: Record<string, string> = { host }
        const auth = authorization(key)
        if (auth) headers.authorization = auth
        if (idempotency) headers['idempotency-key'] = idempotency
        if (body !== undefined) headers['content-type'] = contentType
        const before = await snapshot()
        const res = await sut.inject({
          method: op.method as 'GET',
          url: `${path}${query ? `?${query}` : ''}`,
          headers,
          payload: body,
        })
        const context = `${op.method} ${path}?${query} as ${key} on ${host}: ${res.statusCode} ${res.body.slice(0, 300)}; body ${String(body).slice(0, 200)}`
        expect(res.statusCode, context).toBeLessThan(500)
        if (res.statusCode < 400) return
        expect(String(res.headers['content-type']), context).toMatch(/^application\/json/)
        const error = res.json()
        // The route reached decides the body's shape: a path with `..` is resolved (as clients do) before routing.
        const reached = new URL(path, 'http://roster.test').pathname
        if (reached.startsWith('/api/v1/interns')) InternLifecycleError.parse(error)
        else if (reached === '/api/v1/messages' || reached === '/api/v1/messages/count_tokens') {
          // The Anthropic door refuses in the shape the Anthropic client parses.
          expect(Object.keys(error).sort(), context).toEqual(['error', 'type'])
          expect(error.type, context).toBe('error')
          expect(error.error.type, context).toMatch(/_error$|^request_too_large$/)
          expect(typeof error.error.message, context).toBe('string')
        } else {
          expect(Object.keys(error), context).toEqual(['error'])
          expect(error.error.code, context).toBe(res.statusCode)
          expect(typeof error.error.message, context).toBe('string')
        }
        expect(await snapshot(), `a refused request wrote: ${context}`).toBe(before)
      }),
      { numRuns: 500 },
    )
  }, 240_000)
})
