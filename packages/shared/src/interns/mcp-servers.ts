import {
  AppError,
  SECRET_PLACEHOLDER,
  type CreateMcpServerRequest,
  type McpServer,
  type McpTool,
  type UpdateMcpServerRequest,
} from '@roster/protocol'
import { isUniqueViolation, type Db } from '../db.js'
import { isUuid } from './access.js'
import {
  countMcpServers,
  deleteMcpServer,
  insertMcpServer,
  mcpServerOf,
  mcpServersOf,
  updateMcpServer,
  type McpServerRow,
} from '../repositories/index.js'

// An intern's MCP servers (issue 61, docs/interns.md), one engine for the API's routes and the admin
// CLI: checked, kept and shown here. A server is reached from the intern's host through the egress,
// so its credentials come from the intern's vault: a header that carries one must name it as
// `{{secret:NAME}}` (put in by the egress, for the hosts the secret is bound to), never hold it.

/** An intern's MCP servers at most. */
export const MCP_SERVERS_PER_INTERN = 10

/** Headers whose values are credentials. */
const CREDENTIAL_HEADER = /authorization|cookie|token|secret|password|api[-_]?key|(^|-)key$/i

/** Refuses a URL or headers that would put a credential in the configuration, or in a URL. */
function checkConfiguration(url: string | undefined, headers: Record<string, string> | undefined) {
  if (url !== undefined) {
    const u = new URL(url)
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new AppError('invalid_body', 'invalid request: url: an MCP server is reached over http or https')
    if (u.username || u.password)
      throw new AppError('invalid_body', 'invalid request: url: no credentials in the URL; send them in a header')
    if (/\{\{secret:/.test(decodeURIComponent(u.href)))
      throw new AppError('invalid_body', 'invalid request: url: secrets go in headers, never in the URL')
  }
  for (const [name, value] of Object.entries(headers ?? {}))
    if (CREDENTIAL_HEADER.test(name) && value && !new RegExp(SECRET_PLACEHOLDER.source).test(value))
      throw new AppError(
        'invalid_body',
        `invalid request: headers.${name} carries a credential: keep it in the intern's vault, bound to the server's host, and write {{secret:NAME}} here (docs/vault.md)`,
      )
}

export function mcpServerView(s: McpServerRow): McpServer {
  return {
    id: s.id,
    intern_id: s.internId,
    name: s.name,
    url: s.url,
    headers: s.headers as Record<string, string>,
    enabled: s.enabled,
    tools: (s.tools as McpTool[] | null) ?? null,
    tools_error: s.toolsError,
    tools_seen_at: s.toolsSeenAt?.toISOString() ?? null,
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  }
}

const taken = (name: string | undefined) => (err: unknown) => {
  throw isUniqueViolation(err)
    ? new AppError('name_taken', `this intern already has an MCP server named "${name}"`)
    : err
}

export async function findMcpServer(db: Db, internId: string, id: string) {
  const s = isUuid(id) ? await mcpServerOf(db, internId, id) : null
  if (!s) throw new AppError('not_found', `MCP server ${id} not found`)
  return s
}

export async function addMcpServer(db: Db, internId: string, b: CreateMcpServerRequest): Promise<McpServer> {
  checkConfiguration(b.url, b.headers)
  if ((await countMcpServers(db, internId)) >= MCP_SERVERS_PER_INTERN)
    throw new AppError('work_limit_reached', `an intern has at most ${MCP_SERVERS_PER_INTERN} MCP servers`)
  return mcpServerView(
    await insertMcpServer(db, internId, { name: b.name, url: b.url, headers: b.headers, enabled: b.enabled }).catch(
      taken(b.name),
    ),
  )
}

export async function changeMcpServer(
  db: Db,
  internId: string,
  id: string,
  b: UpdateMcpServerRequest,
): Promise<McpServer> {
  const was = await findMcpServer(db, internId, id)
  checkConfiguration(b.url, b.headers)
  return mcpServerView(await updateMcpServer(db, internId, was.id, b).catch(taken(b.name)))
}

export async function removeMcpServer(db: Db, internId: string, id: string) {
  const s = await findMcpServer(db, internId, id)
  if ((await deleteMcpServer(db, internId, s.id)).count === 0)
    throw new AppError('not_found', `MCP server ${id} not found`)
  return { id: s.id, deleted: true as const }
}

export const listMcpServers = async (db: Db, internId: string) => (await mcpServersOf(db, internId)).map(mcpServerView)
