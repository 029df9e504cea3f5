import type { Db, Prisma } from '../db.js'

// intern_mcp_servers: the remote MCP servers an intern's tools come from (URL, headers that may
// name its secrets), and the tools its host last found on each.

type Tx = Db | Prisma.TransactionClient

export interface McpServerFields {
  name: string
  url: string
  headers: Record<string, string>
  enabled: boolean
}

export type McpServerRow = NonNullable<Awaited<ReturnType<typeof mcpServerOf>>>

export const countMcpServers = (db: Tx, internId: string) => db.internMcpServer.count({ where: { internId } })

export const insertMcpServer = (db: Tx, internId: string, f: McpServerFields) =>
  db.internMcpServer.create({ data: { internId, ...f } })

export const mcpServersOf = (db: Tx, internId: string, enabledOnly = false) =>
  db.internMcpServer.findMany({
    where: { internId, ...(enabledOnly ? { enabled: true } : {}) },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  })

export const mcpServerOf = (db: Tx, internId: string, id: string) =>
  db.internMcpServer.findFirst({ where: { id, internId } })

/** A change of its configuration forgets what was found there (the next turn looks again). */
export const updateMcpServer = (db: Tx, internId: string, id: string, f: Partial<McpServerFields>) =>
  db.internMcpServer.update({
    where: { id, internId },
    data: {
      ...f,
      ...(f.url !== undefined || f.headers !== undefined ? { tools: undefined, toolsError: null } : {}),
      updatedAt: new Date(),
    },
  })

export const deleteMcpServer = (db: Tx, internId: string, id: string) =>
  db.internMcpServer.deleteMany({ where: { id, internId } })

/** What the intern's host found on the server (its tools, what went wrong). */
export const recordMcpTools = (
  db: Tx,
  internId: string,
  id: string,
  tools: { name: string; model_name: string; description: string }[],
  error: string | null,
) =>
  db.internMcpServer.updateMany({
    where: { id, internId },
    data: { tools, toolsError: error, toolsSeenAt: new Date() },
  })
