// What each recorded reply (packages/upstream-sim/recordings) must become on Roster's doors, written
// down by reading the recording: how it finished, its usage in the provider's own numbers (as
// docs/gateway.md's token rules read them), the calls it makes, the provider's own items as
// /responses and /messages show them, and its citations. The text, reasoning and signatures are
// not written here: the test reads them from the recording itself.

export type Finish = 'stop' | 'tool_calls' | 'length' | 'content_filter'

export interface Expected {
  finish?: Finish
  /** All input tokens (cached ones within), all output tokens (reasoning within). */
  usage?: { input: number; cached?: number; output: number; reasoning?: number }
  /** The provider reported no usage: Roster counts the tokens (more than none) and marks them as its count. */
  countedByRoster?: true
  tools?: { name: string; args: unknown }[]
  /** The provider's own items as /responses shows them (types, in order). */
  items?: string[]
  /** …and as /messages shows them (block types, in order); the provider-run ones it has no blocks for are left out. */
  blocks?: string[]
  /** A call for the client of a kind only /responses carries: the other doors fail, naming it. */
  clientCall?: string
  /** url_citation annotations (Anthropic's web search citations among them). */
  citations?: number
  /** Annotations only /responses carries (OpenAI's file citations). */
  otherAnnotations?: number
  /** The call fails on every door: its status, canonical type, and the provider's words. */
  error?: { status: number; type: string; says: string }
  /**
   * The door of the recording's protocol forwards it whole as it came (pass-through): nothing in it
   * is what the door's clients would read otherwise than the door writes it (docs/gateway.md).
   */
  passesThrough?: true
}

const weatherSF = { name: 'weather', args: { location: 'San Francisco' } }

export const EXPECTED: Record<string, Expected> = {
  // ——— Anthropic ———
  'anthropic-text.chunks': { finish: 'stop', usage: { input: 12, output: 30 } },
  'anthropic-text-raw.sse': { finish: 'stop', usage: { input: 17, output: 10 } },
  'anthropic-usage-in-message-delta.chunks': { finish: 'stop', usage: { input: 61, output: 2 } },
  'anthropic-tool-no-args.chunks': {
    finish: 'tool_calls',
    usage: { input: 565, output: 48 },
    tools: [{ name: 'updateIssueList', args: {} }],
  },
  'anthropic-tool-no-args.json': {
    finish: 'tool_calls',
    usage: { input: 602, output: 93 },
    tools: [{ name: 'updateIssueList', args: {} }],
  },
  'anthropic-tool-call.chunks': {
    finish: 'tool_calls',
    usage: { input: 849, output: 47 },
    tools: [{ name: 'json', args: { elements: [{ location: 'San Francisco', temperature: 58, condition: 'sunny' }] } }],
  },
  'anthropic-tool-call-nested.json': {
    finish: 'tool_calls',
    usage: { input: 1151, output: 87 },
    tools: [
      {
        name: 'json',
        args: {
          elements: [
            { location: 'San Francisco', temperature: -5, condition: 'snowy' },
            { location: 'London', temperature: 0, condition: 'snowy' },
            { location: 'Paris', temperature: 23, condition: 'cloudy' },
            { location: 'Berlin', temperature: -9, condition: 'snowy' },
          ],
        },
      },
    ],
  },
  'anthropic-thinking-tool-call.json': {
    finish: 'tool_calls',
    usage: { input: 599, output: 59, reasoning: 18 },
    tools: [{ name: 'checkSandboxErrors', args: {} }],
  },
  'anthropic-thinking-signature.chunks': { finish: 'stop', usage: { input: 47, output: 373, reasoning: 62 } },
  'anthropic-thinking-stream.sse': { finish: 'stop', usage: { input: 45, output: 94 } },
  // Two redacted thinking blocks in a row: two reasoning items, their data kept.
  'anthropic-redacted-thinking.sse': { finish: 'stop', usage: { input: 92, output: 189 } },
  'anthropic-refusal.sse': { finish: 'content_filter', usage: { input: 97, output: 0 } },
  'anthropic-mcp.chunks': {
    finish: 'stop',
    usage: { input: 1250, output: 83 },
    items: ['mcp_call'],
    blocks: ['mcp_tool_use', 'mcp_tool_result'],
  },
  'anthropic-mcp.json': {
    finish: 'stop',
    usage: { input: 1250, output: 88 },
    items: ['mcp_call'],
    blocks: ['mcp_tool_use', 'mcp_tool_result'],
  },
  'anthropic-mcp-toolset.sse': {
    finish: 'stop',
    usage: { input: 4007, output: 245 },
    items: ['mcp_call', 'mcp_call'],
    blocks: ['mcp_tool_use', 'mcp_tool_result', 'mcp_tool_use', 'mcp_tool_result'],
  },
  'anthropic-web-fetch-error.json': {
    finish: 'stop',
    usage: { input: 1902, output: 214 },
    items: ['anthropic:web_fetch'],
    blocks: ['server_tool_use', 'web_fetch_tool_result'],
  },
  'anthropic-invalid-request.json': {
    error: { status: 400, type: 'invalid_request', says: 'unexpected `tool_use_id` found in `tool_result` blocks' },
  },
  // Four calls in one reply.
  'anthropic-parallel-tool-calls.json': {
    finish: 'tool_calls',
    usage: { input: 423, output: 202 },
    tools: ['Alice', 'Bob', 'Charlie', 'Daisy'].map((name) => ({ name: 'retrieve_entity_info', args: { name } })),
  },
  // Anthropic's OpenAI-compatible endpoint: a call numbered 1 with none numbered 0, and no usage.
  'anthropic-openai-compat-tool-call.sse': {
    finish: 'tool_calls',
    countedByRoster: true,
    tools: [{ name: 'read_file', args: { path: 'a.txt' } }],
  },

  // ——— OpenAI Responses, and providers that speak it ———
  'openai-tool-call.chunks': {
    finish: 'tool_calls',
    usage: { input: 45, output: 25 },
    tools: [{ name: 'get_weather', args: { city: 'Beijing' } }],
  },
  'openai-tool-call-raw.sse': {
    finish: 'tool_calls',
    usage: { input: 58, output: 23 },
    tools: [{ name: 'multiply', args: { a: 1231, b: 2331 } }],
  },
  // LM Studio: the call's arguments only in .done events, none in deltas.
  'lmstudio-tool-call-done-only.chunks': {
    finish: 'tool_calls',
    usage: { input: 182, cached: 2, output: 61, reasoning: 48 },
    tools: [weatherSF],
  },
  'openai-local-shell.chunks': {
    usage: { input: 407, output: 151, reasoning: 128 },
    finish: 'stop',
    items: ['local_shell_call'],
    clientCall: 'local_shell_call',
  },
  'openai-local-shell.json': {
    usage: { input: 407, output: 24 },
    finish: 'stop',
    items: ['local_shell_call'],
    clientCall: 'local_shell_call',
  },
  'openai-reasoning-encrypted.json': { finish: 'stop', usage: { input: 865, output: 163, reasoning: 128 } },
  'openai-web-search.json': {
    finish: 'stop',
    usage: { input: 327, output: 770 },
    items: ['web_search_call', 'web_search_call'],
    blocks: ['server_tool_use', 'web_search_tool_result', 'server_tool_use', 'web_search_tool_result'],
    citations: 5,
  },
  'openai-web-search-citations.chunks': {
    finish: 'stop',
    usage: { input: 60093, cached: 34560, output: 4080, reasoning: 3648 },
    items: ['web_search_call', 'web_search_call', 'web_search_call', 'web_search_call'],
    blocks: [
      'server_tool_use',
      'web_search_tool_result',
      'server_tool_use',
      'web_search_tool_result',
      'server_tool_use',
      'web_search_tool_result',
      'server_tool_use',
      'web_search_tool_result',
    ],
    citations: 6,
  },
  'openai-code-interpreter.json': {
    finish: 'stop',
    usage: { input: 2283, output: 1928, reasoning: 1792 },
    items: ['code_interpreter_call', 'code_interpreter_call', 'code_interpreter_call'],
    otherAnnotations: 1,
  },
  'openai-file-search.chunks': {
    finish: 'stop',
    usage: { input: 3748, cached: 2304, output: 543, reasoning: 448 },
    items: ['file_search_call'],
    otherAnnotations: 1,
  },
  'openai-file-search.json': {
    finish: 'stop',
    usage: { input: 3678, cached: 2304, output: 536, reasoning: 448 },
    items: ['file_search_call'],
    otherAnnotations: 1,
  },
  'openai-error-mid-stream.chunks': {
    error: { status: 502, type: 'payment_required', says: 'You exceeded your current quota' },
  },
  'openai-insufficient-quota.json': {
    error: { status: 502, type: 'payment_required', says: 'You exceeded your current quota' },
  },
  // GitHub Copilot: a new item id on every event.
  'copilot-id-rotation.chunks': { finish: 'stop', usage: { input: 19, output: 105, reasoning: 44 } },

  // ——— Chat Completions, from many providers ———
  'openai-chat-long-text.json': { passesThrough: true, finish: 'stop', usage: { input: 16, output: 363 } },
  // Two calls in parallel, each its own index.
  'openai-chat-parallel-tool-calls.sse': {
    passesThrough: true,
    finish: 'tool_calls',
    usage: { input: 364, output: 40 },
    tools: [
      { name: 'get_country', args: {} },
      { name: 'get_product_name', args: {} },
    ],
  },
  // Azure's content filter refusing the prompt (400, code content_filter).
  'azure-content-filter.json': {
    error: { status: 400, type: 'invalid_request', says: "triggering Azure OpenAI's content management policy" },
  },
  // Cut at max_tokens: 400 tokens of long text, finish length.
  'deepseek-length.chunks': { passesThrough: true, finish: 'length', usage: { input: 13, output: 400 } },
  // Azure: a first chunk with empty choices (its prompt filter results).
  'azure-empty-choices.chunks': { finish: 'stop', usage: { input: 15, output: 78, reasoning: 64 } },
  'deepseek-tool-call.chunks': {
    finish: 'tool_calls',
    usage: { input: 374, cached: 256, output: 61, reasoning: 17 },
    tools: [weatherSF],
  },
  // Mistral: a call with its id and no index, in the chunk that finishes.
  'mistral-tool-call-no-index.chunks': { finish: 'tool_calls', usage: { input: 124, output: 22 }, tools: [weatherSF] },
  // GLM on Mistral's API: a call's second piece repeats its type and an empty name.
  'mistral-glm-name-repeated-empty.chunks': {
    finish: 'tool_calls',
    usage: { input: 171, cached: 128, output: 14 },
    tools: [{ name: 'webSearchTool', args: { query: 'current Berlin weather' } }],
  },
  'groq-tool-call.chunks': {
    passesThrough: true,
    finish: 'tool_calls',
    usage: { input: 210, output: 15 },
    tools: [{ name: 'weather', args: {} }],
  },
  // xAI counts reasoning apart from completion_tokens (total = prompt + completion + reasoning).
  'xai-reasoning-outside.chunks': { finish: 'stop', usage: { input: 12, cached: 11, output: 291, reasoning: 290 } },
  'xai-reasoning-outside.json': {
    finish: 'tool_calls',
    usage: { input: 291, cached: 244, output: 215, reasoning: 189 },
    tools: [weatherSF],
  },
  'xai-tool-call.chunks': {
    finish: 'tool_calls',
    usage: { input: 291, cached: 290, output: 222, reasoning: 196 },
    tools: [weatherSF],
  },
  'perplexity-citations.json': { finish: 'stop', usage: { input: 10, output: 251 }, citations: 7 },
  'perplexity-text.json': { finish: 'stop', usage: { input: 11, output: 392 }, citations: 6 },
  // Mistral: content as parts, its thinking a part of its own.
  'mistral-thinking-parts.json': { finish: 'stop', usage: { input: 28, output: 94 } },
  // OpenRouter (Novita): a stream that ends with [DONE] and never names a finish reason.
  'openrouter-tool-call-no-finish.sse': {
    finish: 'tool_calls',
    usage: { input: 57, output: 17 },
    tools: [{ name: 'llm_version', args: {} }],
  },
  'openrouter-text-repeated-role.sse': { passesThrough: true, finish: 'stop', usage: { input: 107, output: 15 } },
}
