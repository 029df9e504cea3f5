import { itemId } from './item-id.js'
import { PROVIDER_ITEM, type ProviderItem, type ProviderItemInfo } from './wire.js'

// Items a provider makes that are none of Roster's own kinds (message, reasoning, function call):
// tools the provider ran itself, and calls of kinds Roster does not translate. Each is carried as
// what it is where a door can show it (see ProviderItem), left out where the provider ran it and
// the door cannot show it, and refused, by name, where the client was meant to act on it.

type Fields = Record<string, unknown>

/** OpenAI Responses items for tools the provider runs itself: the reply holds their result. */
export const PROVIDER_RUN_ITEMS: ReadonlySet<string> = new Set([
  'web_search_call',
  'file_search_call',
  'code_interpreter_call',
  'mcp_call',
  'mcp_list_tools',
])

/** Whether an input item is one a provider made and ran itself (given back, it is the provider's state, not the model's input). */
export const isProviderRunInput = (type: string) =>
  PROVIDER_RUN_ITEMS.has(type.replace(/^openai:/, '')) || /^anthropic:/.test(type)

const obj = (v: unknown): Fields => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Fields) : {})
const str = (v: unknown) => (typeof v === 'string' ? v : undefined)

function parsedJson(text: unknown): unknown {
  if (typeof text !== 'string') return text ?? {}
  try {
    return JSON.parse(text || '{}')
  } catch {
    return text
  }
}

function withInfo(item: Fields, info: ProviderItemInfo): ProviderItem {
  const out = { ...item } as ProviderItem
  out[PROVIDER_ITEM] = info
  return out
}

/** An OpenAI Responses output item Roster has no kind for, as it came. */
export function responsesItem(item: Fields): ProviderItem {
  const type = String(item.type)
  const chatToolCall =
    type === 'custom_tool_call'
      ? {
          id: str(item.call_id) ?? '',
          type: 'custom',
          custom: { name: str(item.name) ?? '', input: str(item.input) ?? '' },
        }
      : undefined
  return withInfo(item, {
    ranByProvider: PROVIDER_RUN_ITEMS.has(type),
    anthropicBlocks: anthropicBlocksOf(item),
    ...(chatToolCall ? { chatToolCall } : {}),
  })
}

/**
 * A Chat Completions tool call of a kind other than `function`, for the client to act on, as the
 * Responses door shows it: a `custom` call (GPT-5's free-form tools) is Responses' own
 * `custom_tool_call`; a kind Roster does not know is `<kind>_tool_call` holding what came under its
 * kind's name. Either is carried back to Chat Completions as it came (`chatToolCall`), and refused, by
 * name, where a door has no way to write it (never renamed into a function call).
 */
export function chatToolCallItem(call: Fields, id: string, status: 'in_progress' | 'completed'): ProviderItem {
  const kind = str(call.type) ?? 'custom'
  const payload = obj(call[kind])
  const callId = str(call.id) ?? id
  const chatToolCall = { ...call, id: callId, type: kind }
  if (kind === 'custom')
    return withInfo(
      {
        type: 'custom_tool_call',
        id,
        call_id: callId,
        name: str(payload.name) ?? '',
        input: str(payload.input) ?? '',
        status,
      },
      { ranByProvider: false, chatToolCall },
    )
  const safe = kind.toLowerCase().replace(/[^a-z0-9_]/g, '_')
  return withInfo(
    { type: `${safe}_tool_call`, id, call_id: callId, [kind]: payload, status },
    { ranByProvider: false, chatToolCall },
  )
}

/** The Messages door's blocks for a Responses item, where Anthropic has the same tool. */
function anthropicBlocksOf(item: Fields): Fields[] | undefined {
  const id = str(item.id) ?? ''
  if (item.type === 'web_search_call') {
    const action = obj(item.action)
    const search = action.type === 'search' || action.type === undefined
    const { type: _type, sources, ...input } = action
    const call = {
      type: 'server_tool_use',
      id,
      name: 'web_search',
      input: search ? { query: input.query ?? '' } : input,
    }
    if (!search) return [call]
    // OpenAI names no titles and seals nothing: Anthropic's fields for them are left empty.
    const results = (Array.isArray(sources) ? sources : []).flatMap((s) => {
      const url = str(obj(s).url)
      return url
        ? [{ type: 'web_search_result', url, title: str(obj(s).title) ?? '', encrypted_content: '', page_age: null }]
        : []
    })
    return [call, { type: 'web_search_tool_result', tool_use_id: id, content: results }]
  }
  if (item.type === 'mcp_call') {
    const error =
      item.error == null ? undefined : typeof item.error === 'string' ? item.error : JSON.stringify(item.error)
    return [
      {
        type: 'mcp_tool_use',
        id,
        name: str(item.name) ?? '',
        server_name: str(item.server_label) ?? '',
        input: parsedJson(item.arguments),
      },
      {
        type: 'mcp_tool_result',
        tool_use_id: id,
        is_error: error !== undefined,
        content: [{ type: 'text', text: error ?? str(item.output) ?? '' }],
      },
    ]
  }
  return undefined
}

/** The text of an Anthropic tool result's content (text blocks joined), or the content as JSON. */
function resultText(content: unknown): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content) && content.every((b) => obj(b).type === 'text'))
    return content.map((b) => String(obj(b).text ?? '')).join('')
  return JSON.stringify(content ?? null)
}

/**
 * An Anthropic server tool's call (`server_tool_use`, `mcp_tool_use`, with its input parsed) and
 * its result block, once it came: Responses' `web_search_call` or `mcp_call` where Responses has
 * the tool, else `anthropic:<tool>` with both blocks as they came (Open Responses' extension items).
 */
export function anthropicToolItem(call: Fields, result: Fields | undefined): ProviderItem {
  const id = str(call.id) ?? ''
  const name = str(call.name) ?? ''
  const input = obj(call.input)
  const failed = result !== undefined && (result.is_error === true || /_error$/.test(String(obj(result.content).type)))
  const status = result === undefined ? 'in_progress' : failed ? 'failed' : 'completed'
  const info: ProviderItemInfo = { ranByProvider: true, anthropicBlocks: result ? [call, result] : [call] }
  if (call.type === 'mcp_tool_use') {
    const text = result === undefined ? null : resultText(result.content)
    return withInfo(
      {
        type: 'mcp_call',
        id,
        status,
        server_label: str(call.server_name) ?? '',
        name,
        arguments: JSON.stringify(input),
        output: failed ? null : text,
        error: failed ? text : null,
      },
      info,
    )
  }
  if (name === 'web_search' && !failed) {
    const found = Array.isArray(result?.content) ? result.content : []
    const sources = found.flatMap((r) => (str(obj(r).url) ? [{ type: 'url', url: str(obj(r).url) }] : []))
    return withInfo(
      { type: 'web_search_call', id, status, action: { type: 'search', query: input.query ?? '', sources } },
      info,
    )
  }
  const kind = name.toLowerCase().replace(/[^a-z0-9_.-]/g, '_') || 'server_tool_use'
  return withInfo({ type: `anthropic:${kind}`, id, status, call, result: result ?? null }, info)
}

/**
 * An Anthropic content block of a kind Roster does not read (one Anthropic adds, a container's
 * upload…): `anthropic:<type>` with the block as it came, shown as it came on the Messages door.
 * Anthropic's protocol asks the client to act on `tool_use` blocks only, so it is content the
 * provider made, left out where a door has no way to show it.
 */
export function anthropicBlockItem(block: Fields): ProviderItem {
  const kind = String(block.type)
    .toLowerCase()
    .replace(/[^a-z0-9_.-]/g, '_')
  return withInfo(
    { type: `anthropic:${kind}`, id: str(block.id) ?? itemId('ab'), status: 'completed', block },
    { ranByProvider: true, anthropicBlocks: [block] },
  )
}
