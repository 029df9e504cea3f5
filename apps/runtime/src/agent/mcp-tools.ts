import { createHash } from 'node:crypto'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ToolSchema } from '@modelcontextprotocol/sdk/types.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import type { JsonSchemaType } from '@modelcontextprotocol/sdk/validation'
import { z } from 'zod'
import type { EgressRequest, EgressResult, HostMcpServers, McpToolsSeen } from '@roster/protocol'
import type { ExtraTools, Json } from './agent-setup.js'

// An intern's tools from its remote MCP servers (issue 61), through the official SDK's client over
// Streamable HTTP. Every request goes through the API's egress, as the intern's http_request does:
// the egress's address rules apply (no private network unless allowed), the server's headers name
// the intern's secrets as `{{secret:NAME}}` and the egress puts them in for the hosts they are bound
// to (and takes them out of what comes back), so no credential is on this host, in the model's
// context or in a transcript. A server's tools reach the model as `mcp__<server>__<tool>`, each
// call under the same approval as the shell's (manual: the user allows it first). A server that
// hangs is given up after MCP_TOOL_TIMEOUT_MS, one whose answer is larger than
// MCP_RESPONSE_MAX_BYTES is not read, a tool the protocol's schema refuses or whose input schema is
// no object schema is left out (the rest of its server's stay: the list is read loosely and each
// tool checked on its own; a provider would refuse a whole call over one bad schema), and a result
// that does not fit the output schema its tool declared is refused: each says so to the model (and
// on the intern's page), and the turn goes on.

export interface McpFleet {
  mcpServers(internId: string): Promise<HostMcpServers['servers']>
  reportMcpTools(internId: string, serverId: string, seen: Omit<McpToolsSeen, 'generation'>): Promise<void>
  send(
    internId: string,
    args: Omit<EgressRequest, 'method'> & { method?: string },
    signal?: AbortSignal,
  ): Promise<EgressResult>
}

export interface McpSettings {
  timeoutMs: number
  maxResponseBytes: number
  /** A connection nothing asked of for this long is ended (MCP_SESSION_IDLE_MS). */
  idleMs: number
}

type Server = HostMcpServers['servers'][number]
interface Offered {
  server: Server
  tool: string
  definition: Json
  /** Checks a result's structured content against the output schema the tool declared. */
  validate?: (value: unknown) => { valid: boolean; errorMessage?: string }
}

/** tools/list's answer, read loosely: each tool is checked on its own. */
const LooseToolList = z.looseObject({ tools: z.array(z.unknown()).max(10_000), nextCursor: z.string().optional() })
const validators = new AjvJsonSchemaValidator()
interface Connection {
  serverId: string
  key: string
  client: Client
  transport: StreamableHTTPClientTransport
  /** Its tools as offered, by the model's name for each; listed again after LIST_AGAIN_MS. */
  tools: Map<string, Offered>
  listedAt: number
  /** Ends it once nothing has been asked of it for MCP_SESSION_IDLE_MS. */
  idle?: NodeJS.Timeout
}

/** A tool's result as the model is given it, at most. */
const RESULT_MAX_CHARS = 64 * 1024
/** A tool's input schema, serialized, at most. */
const SCHEMA_MAX_CHARS = 32 * 1024
/** A server's tools are listed again after this long (it may have changed them). */
const LIST_AGAIN_MS = 60_000
/** Tools taken from one server at most. */
const TOOLS_PER_SERVER = 200

/** The model's name for a server's tool: only the characters providers take, at most 64. */
export function modelToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64)
}

/** Why a tool's input schema cannot be offered to a model, if it cannot. */
export function schemaProblem(schema: unknown): string | undefined {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return 'its input schema is not an object'
  if ((schema as { type?: unknown }).type !== 'object') return 'its input schema is not of type object'
  if (JSON.stringify(schema).length > SCHEMA_MAX_CHARS) return `its input schema is over ${SCHEMA_MAX_CHARS} characters`
  const props = (schema as { properties?: unknown }).properties
  if (props !== undefined && (typeof props !== 'object' || props === null || Array.isArray(props)))
    return 'its input schema’s properties are not an object'
  return undefined
}

/** A tool's result as text for the model: its content's text (others named), or its structured content. */
function resultText(result: Json): string {
  const parts = Array.isArray(result.content) ? (result.content as Json[]) : []
  const text = parts
    .map((p) => {
      if (p.type === 'text') return String(p.text ?? '')
      if (p.type === 'resource') {
        const r = (p.resource ?? {}) as Json
        return typeof r.text === 'string' ? r.text : `[resource ${String(r.uri ?? '')}]`
      }
      if (p.type === 'resource_link') return `[resource ${String(p.uri ?? '')}]`
      return `[${String(p.type)}${p.mimeType ? ` ${String(p.mimeType)}` : ''} left out]`
    })
    .join('\n')
  const out = text || (result.structuredContent === undefined ? '' : JSON.stringify(result.structuredContent))
  return out.length > RESULT_MAX_CHARS
    ? `${out.slice(0, RESULT_MAX_CHARS)}… (cut at ${RESULT_MAX_CHARS} characters)`
    : out
}

export class InternMcp {
  private readonly connections = new Map<string, Promise<Connection>>()
  /** Each server's connection once made: the one `drop` may end (not one that replaced it). */
  private readonly live = new Map<string, Connection>()

  constructor(
    private readonly internId: string,
    private readonly fleet: McpFleet,
    private readonly settings: McpSettings,
    private readonly log: { warn(obj: object, msg: string): void },
  ) {}

  /** The tools of the intern's MCP servers for a turn: each server connected (or reused) and its tools listed. */
  async tools(signal?: AbortSignal): Promise<ExtraTools | undefined> {
    let servers: Server[]
    try {
      servers = await this.fleet.mcpServers(this.internId)
    } catch (err) {
      this.log.warn(
        { err, intern: this.internId },
        'the intern’s MCP servers could not be read; its turn goes on without them',
      )
      return undefined
    }
    const keys = new Map(servers.map((s) => [s.id, keyOf(s)]))
    // Servers removed or changed since: their connections closed.
    for (const [id, connection] of this.connections)
      void connection.then(
        (c) => keys.get(id) !== c.key && this.drop(id, c),
        () => this.connections.delete(id),
      )
    const offered = new Map<string, Offered>()
    await Promise.all(
      servers.map(async (server) => {
        const connection = await this.connection(server, signal).catch(() => undefined)
        for (const [name, o] of connection?.tools ?? []) if (!offered.has(name)) offered.set(name, o)
      }),
    )
    if (!offered.size) return undefined
    return {
      definitions: [...offered.values()].map((o) => o.definition),
      run: (name, args, permit, runSignal) => {
        const o = offered.get(name)
        return o ? this.call(o, args, permit, runSignal) : undefined
      },
    }
  }

  /** Ends every connection (the intern leaves this host). */
  async close() {
    const all = [...this.connections.values()]
    this.connections.clear()
    this.live.clear()
    await Promise.allSettled(all.map(async (c) => this.end(await c)))
  }

  /**
   * Ends a connection: its session ended on the server (DELETE, as the protocol asks of a client that
   * is done with one; a server that does not answer within MCP_TOOL_TIMEOUT_MS is not waited for), then closed.
   */
  private async end(c: Connection) {
    clearTimeout(c.idle)
    await Promise.race([
      c.transport.terminateSession().catch(() => {}),
      new Promise((r) => setTimeout(r, this.settings.timeoutMs).unref()),
    ])
    await c.client.close().catch(() => {})
  }

  /** Ends `c` if it is still the server's connection (not one ended already, or replaced). */
  private drop(id: string, c: Connection) {
    if (this.live.get(id) !== c) return
    this.live.delete(id)
    this.connections.delete(id)
    void this.end(c)
  }

  /** The server's connection: reused while its configuration holds and it answers; its tools listed again now and then. */
  private async connection(server: Server, signal?: AbortSignal): Promise<Connection> {
    const key = keyOf(server)
    let pending = this.connections.get(server.id)
    const current = pending && (await pending.catch(() => undefined))
    if (current && current.key === key && Date.now() - current.listedAt < LIST_AGAIN_MS) return this.touch(current)
    if (current) this.drop(server.id, current)
    pending = this.connect(server, key, signal)
    this.connections.set(server.id, pending)
    try {
      const made = await pending
      this.live.set(server.id, made)
      return this.touch(made)
    } catch (err) {
      this.connections.delete(server.id)
      throw err
    }
  }

  /** Used now: it is ended only after MCP_SESSION_IDLE_MS more with nothing asked of it. */
  private touch(c: Connection): Connection {
    clearTimeout(c.idle)
    c.idle = setTimeout(() => this.drop(c.serverId, c), this.settings.idleMs).unref()
    return c
  }

  private async connect(server: Server, key: string, signal?: AbortSignal): Promise<Connection> {
    const client = new Client({ name: 'roster-intern', version: '1.0.0' })
    const options = { timeout: this.settings.timeoutMs, signal }
    const found: McpToolsSeen['tools'] = []
    const problems: string[] = []
    const tools = new Map<string, Offered>()
    const transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch: this.egressFetch(server) })
    try {
      await client.connect(transport, options)
      let cursor: string | undefined
      for (let page = 0; page < 10; page++) {
        const listed = await client.request(
          { method: 'tools/list', params: cursor ? { cursor } : {} },
          LooseToolList,
          options,
        )
        for (const raw of listed.tools) {
          if (tools.size >= TOOLS_PER_SERVER) {
            problems.push(`more than ${TOOLS_PER_SERVER} tools: the rest left out`)
            break
          }
          const said = String((raw as { name?: unknown })?.name ?? 'a tool').slice(0, 100)
          const parsed = ToolSchema.safeParse(raw)
          if (!parsed.success) {
            const issue = parsed.error.issues[0]
            problems.push(`${said} left out: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'not a tool'}`)
            continue
          }
          const tool = parsed.data
          const name = modelToolName(server.name, tool.name)
          const description = `[MCP ${server.name}] ${tool.description ?? tool.title ?? tool.name}`.slice(0, 1_024)
          let problem = tools.has(name)
            ? `its name is taken by another of the server's tools as ${name}`
            : schemaProblem(tool.inputSchema)
          let validate: Offered['validate']
          if (!problem && tool.outputSchema)
            try {
              validate = validators.getValidator(tool.outputSchema as JsonSchemaType)
            } catch (err) {
              problem = `its output schema cannot be read: ${(err as Error).message}`
            }
          if (problem) {
            problems.push(`${said} left out: ${problem}`)
            continue
          }
          tools.set(name, {
            server,
            tool: tool.name,
            definition: { type: 'function', name, description, parameters: tool.inputSchema },
            validate,
          })
          found.push({ name: tool.name.slice(0, 256), model_name: name, description: description.slice(0, 2_048) })
        }
        cursor = listed.nextCursor
        if (!cursor || tools.size >= TOOLS_PER_SERVER) break
      }
    } catch (err) {
      void client.close().catch(() => {})
      const error = `could not list its tools: ${(err as Error).message}`.slice(0, 4_000)
      this.report(server, [], error)
      throw err
    }
    this.report(server, found, problems.length ? problems.join('; ').slice(0, 4_000) : null)
    return { serverId: server.id, key, client, transport, tools, listedAt: Date.now() }
  }

  private report(server: Server, tools: McpToolsSeen['tools'], error: string | null) {
    void this.fleet
      .reportMcpTools(this.internId, server.id, { tools, error })
      .catch((err: unknown) =>
        this.log.warn({ err, intern: this.internId }, 'what an MCP server offers could not be recorded'),
      )
  }

  private async call(
    o: Offered,
    args: Json,
    permit: (kind: string, operation: string) => Promise<string | undefined>,
    signal?: AbortSignal,
  ): Promise<string> {
    const shown = JSON.stringify(args)
    const refused = await permit(
      `mcp:${o.server.name}:${o.tool}`,
      `MCP tool ${o.tool} of ${o.server.name} (${new URL(o.server.url).host}): ${shown.length > 300 ? `${shown.slice(0, 300)}…` : shown}`,
    )
    if (refused) return refused
    // Ended meanwhile (idle, or dropped after a failure): connected to again.
    const connection =
      (await this.connections.get(o.server.id)?.catch(() => undefined)) ??
      (await this.connection(o.server, signal).catch(() => undefined))
    if (!connection)
      return JSON.stringify({ error: `the MCP server ${o.server.name} is not connected; try again later` })
    this.touch(connection)
    try {
      const result = (await connection.client.callTool({ name: o.tool, arguments: args }, undefined, {
        timeout: this.settings.timeoutMs,
        signal,
      })) as Json
      const text = resultText(result)
      if (result.isError) return JSON.stringify({ error: text || 'the tool failed' })
      if (o.validate) {
        // A tool that declared its output answers in it: what does not fit is not passed on as if it did.
        const checked =
          result.structuredContent === undefined
            ? { valid: false, errorMessage: 'it declares an output schema but gave no structured content' }
            : o.validate(result.structuredContent)
        if (!checked.valid)
          return JSON.stringify({
            error: `the MCP server ${o.server.name} failed to run ${o.tool}: its result does not fit the output schema it declared (${checked.errorMessage ?? 'invalid'})`,
          })
      }
      return text
    } catch (err) {
      if (signal?.aborted) throw err
      // A server that failed mid-call is connected to anew at the next turn.
      this.drop(o.server.id, connection)
      const message = (err as Error).message
      const why = /timed out|timeout/i.test(message)
        ? `it did not answer within ${Math.round(this.settings.timeoutMs / 1000)} s`
        : message
      return JSON.stringify({ error: `the MCP server ${o.server.name} failed to run ${o.tool}: ${why}` })
    }
  }

  /**
   * The client's fetch, through the egress: each POST is one request and its whole answer (an
   * event stream is read to its end); no standing GET stream is opened (405: the SDK then reads
   * each answer on its own request), so nothing waits on a connection between turns.
   */
  private egressFetch(server: Server): typeof fetch {
    return async (input, init) => {
      const url = input instanceof Request ? input.url : String(input)
      const method = (init?.method ?? 'GET').toUpperCase()
      if (method === 'GET') return new Response(null, { status: 405 })
      const headers: Record<string, string> = {}
      new Headers(init?.headers).forEach((v, k) => (headers[k] = v))
      // The configuration's headers win (its credentials), but the SDK's own protocol headers stay.
      for (const [k, v] of Object.entries(server.headers)) headers[k.toLowerCase()] = v
      const body = typeof init?.body === 'string' ? init.body : init?.body ? String(init.body) : undefined
      const r = await this.fleet.send(
        this.internId,
        { method, url, headers, body, max_bytes: this.settings.maxResponseBytes },
        init?.signal ?? undefined,
      )
      if ('error' in r) throw new Error(r.error)
      if (r.truncated)
        throw new Error(
          `its answer was larger than ${this.settings.maxResponseBytes} bytes (MCP_RESPONSE_MAX_BYTES), so it was not read`,
        )
      const out = new Headers()
      for (const [k, v] of Object.entries(r.headers))
        if (!['content-length', 'transfer-encoding', 'content-encoding', 'connection'].includes(k)) out.set(k, v)
      return new Response([204, 205, 304].includes(r.status) ? null : r.body, { status: r.status, headers: out })
    }
  }
}

/** What a connection was made with: a change of it connects anew. */
const keyOf = (s: Server) =>
  createHash('sha256')
    .update(JSON.stringify([s.url, s.headers, s.name]))
    .digest('hex')
