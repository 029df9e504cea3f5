import fc from 'fast-check'

// Provider traffic generated from each protocol's grammar, not from examples: what the providers'
// own published types (the openai client's ChatCompletionChunk and ResponseStreamEvent, the Anthropic
// client's RawMessageStreamEvent) allow. Every optional field may be absent, every open union may
// bring a kind no one has seen, every string may come in any number of pieces, and usage may be
// absent, zero, repeated or where a provider chose to put it. A reply is generated once as what it
// says (`Said`: its text, reasoning and calls, its usage), then written in a protocol, streamed or
// whole, with the choices the grammar leaves open (`Writing`); a test holds what every door makes of
// it against `Said`.

/** A function call the provider made. */
export interface SaidCall {
  id: string
  name: string
  /** Its arguments: valid JSON, in pieces as they stream. */
  pieces: string[]
}

/** What a reply says, whatever protocol writes it. */
export interface Said {
  reasoning: string[]
  text: string[]
  calls: SaidCall[]
  /** A free-form call (GPT-5's `custom` tools): Chat Completions and Responses only. */
  custom?: { id: string; name: string; input: string[] }
  /** An item or block of a kind no protocol names yet (the provider's, carried or refused by name). */
  unknownKind?: string
  /** Usage as the provider counts it; absent: the provider says nothing of it. */
  usage?: { input: number; output: number; cacheWrite: number }
}

/** How a protocol writes it: the choices its grammar leaves to the provider. */
export interface Writing {
  /** Chat Completions: how calls are told apart (OpenAI's index, Mistral's ids alone, pieces that only continue). */
  calls: 'indexed' | 'ids-only' | 'continued' | 'interleaved'
  /** Where usage goes (`zeros`: a usage of 0 tokens; `absent`: none at all). */
  usage: 'usual' | 'elsewhere' | 'repeated' | 'zeros' | 'absent'
  /** Fields the grammar makes optional are left out. */
  terse: boolean
  /** Fields and events no reader knows are added. */
  extra: boolean
  /** Responses: function arguments only in the `.done` events; Anthropic: a call's input whole in its start. */
  whole: boolean
  /** Chat Completions: the name of the reasoning field. */
  reasoningField: 'reasoning_content' | 'reasoning'
}

const piecesOf = (s: string, cuts: number[]): string[] => {
  const at = [...new Set(cuts.map((c) => c % (s.length + 1)))].sort((a, b) => a - b)
  const out: string[] = []
  let from = 0
  for (const c of at) if (c > from) out.push(s.slice(from, (from = c)))
  out.push(s.slice(from))
  return out.filter((p, i) => p || i === 0)
}
const pieced = (s: fc.Arbitrary<string>) =>
  fc.tuple(s, fc.array(fc.nat(), { maxLength: 4 })).map(([whole, cuts]) => piecesOf(whole, cuts))

const word = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 })
const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,12}$/)
const json = fc
  .dictionary(fc.stringMatching(/^[a-z]{1,6}$/), fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.boolean()), {
    maxKeys: 3,
  })
  .map((o) => JSON.stringify(o))

export const said: fc.Arbitrary<Said> = fc
  .record({
    reasoning: fc.oneof(fc.constant([] as string[]), pieced(word)),
    text: fc.oneof(fc.constant([] as string[]), pieced(word)),
    calls: fc.array(fc.record({ name, pieces: pieced(json) }), { maxLength: 3 }),
    custom: fc.option(fc.record({ name, input: pieced(word) }), { nil: undefined, freq: 4 }),
    unknownKind: fc.option(fc.constantFrom('frobnicate_call', 'hologram', 'x.y-z'), { nil: undefined, freq: 5 }),
    usage: fc.option(
      fc.record({
        input: fc.integer({ min: 1, max: 5000 }),
        output: fc.integer({ min: 1, max: 5000 }),
        cacheWrite: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1000 })),
      }),
      { nil: undefined, freq: 2 },
    ),
    tag: fc.nat(),
  })
  .map(({ tag, calls, custom, usage, ...rest }) => ({
    ...rest,
    calls: calls.map((c, i) => ({ ...c, id: `call_${tag}_${i}` })),
    ...(custom ? { custom: { ...custom, id: `ctc_${tag}` } } : {}),
    ...(usage ? { usage: { ...usage, cacheWrite: Math.min(usage.cacheWrite, usage.input) } } : {}),
  }))
  // Something is said: a reply of nothing at all is another test's.
  .filter((s) => s.text.join('') !== '' || s.calls.length > 0 || s.custom !== undefined)

export const writing: fc.Arbitrary<Writing> = fc.record({
  calls: fc.constantFrom('indexed', 'ids-only', 'continued', 'interleaved'),
  usage: fc.constantFrom('usual', 'elsewhere', 'repeated', 'zeros', 'absent'),
  terse: fc.boolean(),
  extra: fc.boolean(),
  whole: fc.boolean(),
  reasoningField: fc.constantFrom('reasoning_content', 'reasoning'),
})

type Json = Record<string, unknown>
const joined = (p: string[]) => p.join('')
/** What no reader knows, added where `extra` says: a field beside the known ones. */
const more = (w: Writing, o: Json): Json => (w.extra ? { ...o, x_unseen: { nested: [1, 'two'] } } : o)

// ——— OpenAI Chat Completions ———

function chatUsage(s: Said, w: Writing): Json | undefined {
  if (w.usage === 'absent') return undefined
  if (w.usage === 'zeros') return { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
  const u = s.usage ?? { input: 0, output: 0, cacheWrite: 0 }
  return {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    ...(w.terse
      ? {}
      : { prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } }),
  }
}

/** The usage the provider reported, as a door must give it back (none: Roster counts). */
export function reportedUsage(s: Said, w: Writing, protocol: GrammarProtocol): Said['usage'] {
  if (!s.usage || w.usage === 'absent' || w.usage === 'zeros') return undefined
  return protocol === 'openai-chat' ? { ...s.usage, cacheWrite: 0 } : s.usage
}

/** A Chat Completions stream's events' data, in order ([DONE] included). */
export function chatStream(s: Said, w: Writing): string[] {
  const head = (choices: Json[]): Json =>
    more(w, {
      id: 'chatcmpl-gen',
      ...(w.terse ? {} : { object: 'chat.completion.chunk', created: 1, model: 'gen', system_fingerprint: null }),
      choices,
    })
  const choice = (delta: Json, finish: string | null = null): Json => ({
    ...(w.terse ? {} : { index: 0, logprobs: null }),
    delta: more(w, delta),
    finish_reason: finish,
  })
  const out: Json[] = [head([choice(w.terse ? {} : { role: 'assistant', content: '' })])]
  // Azure's content-filter results: a chunk with no choices at all.
  if (w.extra) out.push(head([]))
  for (const r of s.reasoning) out.push(head([choice({ [w.reasoningField]: r })]))
  for (const t of s.text) out.push(head([choice({ content: t })]))
  const fn = (c: SaidCall, i: number, piece: number): Json => {
    const first = piece === 0
    const index = w.calls === 'indexed' || w.calls === 'interleaved' ? { index: i } : {}
    const id = first || w.calls === 'ids-only' ? { id: c.id } : {}
    return {
      ...index,
      ...id,
      ...(first ? { type: 'function' } : {}),
      // A later piece may repeat its kind and an empty name (GLM on Mistral's API).
      ...(!first && w.extra ? { type: 'function' } : {}),
      function: { ...(first ? { name: c.name } : w.extra ? { name: '' } : {}), arguments: c.pieces[piece] ?? '' },
    }
  }
  if (w.calls === 'ids-only') {
    // Mistral: every call whole, each with its id, in one chunk, none with an index.
    out.push(
      head([
        choice({
          tool_calls: s.calls.map((c) => ({ ...fn(c, 0, 0), function: { name: c.name, arguments: joined(c.pieces) } })),
        }),
      ]),
    )
  } else if (w.calls === 'interleaved') {
    const longest = Math.max(0, ...s.calls.map((c) => c.pieces.length))
    for (let p = 0; p < longest; p++)
      for (const [i, c] of s.calls.entries())
        if (p < c.pieces.length) out.push(head([choice({ tool_calls: [fn(c, i, p)] })]))
  } else
    for (const [i, c] of s.calls.entries())
      for (let p = 0; p < c.pieces.length; p++) out.push(head([choice({ tool_calls: [fn(c, i, p)] })]))
  if (s.custom) {
    const i = s.calls.length
    s.custom.input.forEach((piece, p) =>
      out.push(
        head([
          choice({
            tool_calls: [
              {
                index: i,
                ...(p === 0 ? { id: s.custom!.id, type: 'custom' } : {}),
                custom: { ...(p === 0 ? { name: s.custom!.name } : {}), input: piece },
              },
            ],
          }),
        ]),
      ),
    )
  }
  const calls = s.calls.length > 0 || s.custom !== undefined
  const usage = chatUsage(s, w)
  const finish = calls ? 'tool_calls' : 'stop'
  if (w.usage === 'elsewhere' && usage) {
    // Groq puts it in x_groq, Moonshot on the finishing choice.
    out.push(head([{ ...choice({}, finish), ...(w.terse ? { usage } : {}) }]))
    if (!w.terse) out.push({ ...head([]), x_groq: { id: 'req_gen', usage } })
  } else {
    out.push(head([choice({}, finish)]))
    if (usage) out.push({ ...head([]), usage })
    if (usage && w.usage === 'repeated') out.push({ ...head([]), usage })
  }
  return [...out.map((o) => JSON.stringify(o)), '[DONE]']
}

/** A whole Chat Completions reply. */
export function chatWhole(s: Said, w: Writing): Json {
  const calls: Json[] = s.calls.map((c) => ({
    id: c.id,
    type: 'function',
    function: { name: c.name, arguments: joined(c.pieces) },
  }))
  if (s.custom)
    calls.push({ id: s.custom.id, type: 'custom', custom: { name: s.custom.name, input: joined(s.custom.input) } })
  const usage = chatUsage(s, w)
  const message: Json = more(w, {
    role: 'assistant',
    content: s.text.length ? joined(s.text) : null,
    ...(s.reasoning.length ? { [w.reasoningField]: joined(s.reasoning) } : {}),
    ...(calls.length ? { tool_calls: calls } : {}),
    ...(w.terse ? {} : { refusal: null }),
  })
  return more(w, {
    id: 'chatcmpl-gen',
    object: 'chat.completion',
    created: 1,
    model: 'gen',
    choices: [{ index: 0, message, finish_reason: calls.length ? 'tool_calls' : 'stop', logprobs: null }],
    ...(usage && w.usage === 'elsewhere' ? { x_groq: { usage } } : usage ? { usage } : {}),
  })
}

// ——— OpenAI Responses ———

function responsesUsage(s: Said, w: Writing): Json | undefined {
  if (w.usage === 'absent') return undefined
  if (w.usage === 'zeros') return { input_tokens: 0, output_tokens: 0, total_tokens: 0 }
  const u = s.usage ?? { input: 0, output: 0, cacheWrite: 0 }
  return {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: 0, ...(u.cacheWrite ? { cache_write_tokens: u.cacheWrite } : {}) },
    output_tokens: u.output,
    ...(w.terse ? {} : { output_tokens_details: { reasoning_tokens: 0 } }),
    total_tokens: u.input + u.output,
  }
}

/** An OpenAI Responses stream's events' data, in order. */
export function responsesStream(s: Said, w: Writing): string[] {
  const out: Json[] = []
  const base = { id: 'resp_gen', object: 'response', created_at: 1, model: 'gen', output: [] as Json[] }
  out.push({ type: 'response.created', response: { ...base, status: 'in_progress' } })
  if (!w.terse) out.push({ type: 'response.in_progress', response: { ...base, status: 'in_progress' } })
  const items: Json[] = []
  let oi = 0
  const item = (done: Json, streamed: (at: Json) => Json[], added: Json = done) => {
    const at = { output_index: oi, item_id: done.id }
    out.push({ type: 'response.output_item.added', output_index: oi, item: added })
    out.push(...streamed(at))
    out.push(more(w, { type: 'response.output_item.done', output_index: oi, item: done }))
    items.push(done)
    oi++
  }
  if (s.reasoning.length)
    item(
      { type: 'reasoning', id: 'rs_gen', summary: [{ type: 'summary_text', text: joined(s.reasoning) }] },
      (at) => [
        {
          type: 'response.reasoning_summary_part.added',
          ...at,
          summary_index: 0,
          part: { type: 'summary_text', text: '' },
        },
        ...s.reasoning.map((d) => ({
          type: 'response.reasoning_summary_text.delta',
          ...at,
          summary_index: 0,
          delta: d,
        })),
      ],
      { type: 'reasoning', id: 'rs_gen', summary: [] },
    )
  if (s.text.length) {
    const text = joined(s.text)
    const part = { type: 'output_text', text, annotations: [] }
    item(
      { type: 'message', id: 'msg_gen', role: 'assistant', status: 'completed', content: [part] },
      (at) => [
        { type: 'response.content_part.added', ...at, content_index: 0, part: { ...part, text: '' } },
        ...(w.extra ? [{ type: 'response.unseen_event.delta', ...at, delta: 'not text' }] : []),
        ...s.text.map((d) => ({
          type: 'response.output_text.delta',
          ...at,
          content_index: 0,
          delta: d,
          ...(w.terse ? {} : { logprobs: [] }),
        })),
        { type: 'response.output_text.done', ...at, content_index: 0, text },
      ],
      { type: 'message', id: 'msg_gen', role: 'assistant', status: 'in_progress', content: [] },
    )
  }
  for (const c of s.calls) {
    const args = joined(c.pieces)
    const call = { type: 'function_call', id: `fc_${c.id}`, call_id: c.id, name: c.name, status: 'completed' }
    item(
      { ...call, arguments: args },
      (at) =>
        w.whole
          ? [{ type: 'response.function_call_arguments.done', ...at, arguments: args }]
          : c.pieces.map((d) => ({ type: 'response.function_call_arguments.delta', ...at, delta: d })),
      { ...call, arguments: '', status: 'in_progress' },
    )
  }
  if (s.custom) {
    const input = joined(s.custom.input)
    const call = { type: 'custom_tool_call', id: `ctc_${s.custom.id}`, call_id: s.custom.id, name: s.custom.name }
    item(
      { ...call, input, status: 'completed' },
      (at) => s.custom!.input.map((d) => ({ type: 'response.custom_tool_call_input.delta', ...at, delta: d })),
      { ...call, input: '', status: 'in_progress' },
    )
  }
  if (s.unknownKind) item({ type: s.unknownKind, id: 'unk_gen', status: 'completed', payload: { a: 1 } }, () => [])
  const usage = responsesUsage(s, w)
  out.push({
    type: 'response.completed',
    response: { ...base, status: 'completed', output: items, ...(usage ? { usage } : {}) },
  })
  return out.map((o, i) => JSON.stringify(w.terse ? o : { ...o, sequence_number: i }))
}

/** A whole OpenAI Responses reply. */
export function responsesWhole(s: Said, w: Writing): Json {
  const events = responsesStream(s, w).map((e) => JSON.parse(e) as Json)
  return (events.at(-1) as { response: Json }).response
}

// ——— Anthropic Messages ———

function anthropicUsage(s: Said, w: Writing, at: 'start' | 'end'): Json | undefined {
  if (w.usage === 'absent') return at === 'start' ? { output_tokens: 0 } : undefined
  if (w.usage === 'zeros') return { input_tokens: 0, output_tokens: 0 }
  const u = s.usage ?? { input: 0, output: 0, cacheWrite: 0 }
  const input = {
    input_tokens: u.input - u.cacheWrite,
    ...(u.cacheWrite || !w.terse ? { cache_creation_input_tokens: u.cacheWrite, cache_read_input_tokens: 0 } : {}),
  }
  // Anthropic counts the input at the start, the output at the end ("elsewhere": both at the end, as message_delta may).
  if (at === 'start') return w.usage === 'elsewhere' ? { output_tokens: 1 } : { ...input, output_tokens: 1 }
  return w.usage === 'elsewhere' || w.usage === 'repeated'
    ? { ...input, output_tokens: u.output }
    : { output_tokens: u.output }
}

/** An Anthropic Messages stream's events' data, in order. */
export function anthropicStream(s: Said, w: Writing): string[] {
  const out: Json[] = []
  const startUsage = anthropicUsage(s, w, 'start')
  out.push({
    type: 'message_start',
    message: more(w, {
      id: 'msg_gen',
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'gen',
      stop_reason: null,
      stop_sequence: null,
      ...(startUsage ? { usage: startUsage } : {}),
    }),
  })
  let index = 0
  const block = (start: Json, deltas: Json[]) => {
    out.push({ type: 'content_block_start', index, content_block: start })
    if (w.extra) out.push({ type: 'ping' })
    for (const d of deltas) out.push({ type: 'content_block_delta', index, delta: d })
    out.push({ type: 'content_block_stop', index })
    index++
  }
  if (s.reasoning.length)
    block({ type: 'thinking', thinking: '', signature: '' }, [
      ...s.reasoning.map((t) => ({ type: 'thinking_delta', thinking: t })),
      { type: 'signature_delta', signature: 'sig_gen' },
    ])
  if (s.text.length)
    block({ type: 'text', text: '' }, [
      ...(w.extra ? [{ type: 'unseen_delta', stuff: 1 }] : []),
      ...s.text.map((t) => ({ type: 'text_delta', text: t })),
    ])
  if (s.unknownKind) block({ type: s.unknownKind, id: 'unk_gen', payload: { a: 1 } }, [])
  for (const c of s.calls) {
    const input = JSON.parse(joined(c.pieces)) as Json
    if (w.whole) block({ type: 'tool_use', id: c.id, name: c.name, input }, [])
    else
      block({ type: 'tool_use', id: c.id, name: c.name, input: {} }, [
        ...(w.terse ? [] : [{ type: 'input_json_delta', partial_json: '' }]),
        ...c.pieces.map((p) => ({ type: 'input_json_delta', partial_json: p })),
      ])
  }
  const end = anthropicUsage(s, w, 'end')
  out.push(
    more(w, {
      type: 'message_delta',
      delta: { stop_reason: s.calls.length ? 'tool_use' : 'end_turn', stop_sequence: null },
      ...(end ? { usage: end } : {}),
    }),
  )
  if (w.extra) out.push({ type: 'unseen_event', data: 1 })
  out.push({ type: 'message_stop' })
  return out.map((o) => JSON.stringify(o))
}

/** A whole Anthropic Messages reply. */
export function anthropicWhole(s: Said, w: Writing): Json {
  const content: Json[] = []
  if (s.reasoning.length) content.push({ type: 'thinking', thinking: joined(s.reasoning), signature: 'sig_gen' })
  if (s.text.length) content.push({ type: 'text', text: joined(s.text) })
  if (s.unknownKind) content.push({ type: s.unknownKind, id: 'unk_gen', payload: { a: 1 } })
  for (const c of s.calls)
    content.push({ type: 'tool_use', id: c.id, name: c.name, input: JSON.parse(joined(c.pieces)) })
  const start = anthropicUsage(s, w, 'start')
  const end = anthropicUsage(s, w, 'end')
  const usage = w.usage === 'absent' ? undefined : { ...start, ...end }
  return more(w, {
    id: 'msg_gen',
    type: 'message',
    role: 'assistant',
    model: 'gen',
    content,
    stop_reason: s.calls.length ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    ...(usage ? { usage } : {}),
  })
}

export type GrammarProtocol = 'openai-chat' | 'openai-responses' | 'anthropic-messages'

/** The bytes a provider of `protocol` sends for `s` written as `w`, streamed (framed as the protocol frames events) or whole. */
export function wireBytes(protocol: GrammarProtocol, s: Said, w: Writing, stream: boolean): Buffer {
  if (!stream) {
    const whole =
      protocol === 'openai-chat'
        ? chatWhole(s, w)
        : protocol === 'openai-responses'
          ? responsesWhole(s, w)
          : anthropicWhole(s, w)
    return Buffer.from(JSON.stringify(whole))
  }
  const events =
    protocol === 'openai-chat'
      ? chatStream(s, w)
      : protocol === 'openai-responses'
        ? responsesStream(s, w)
        : anthropicStream(s, w)
  if (protocol === 'openai-chat') return Buffer.from(events.map((e) => `data: ${e}\n\n`).join(''))
  // Named events (`event:` lines), which terse providers leave out: readers go by the data's type.
  return Buffer.from(
    events
      .map((e) => (w.terse ? `data: ${e}\n\n` : `event: ${(JSON.parse(e) as { type: string }).type}\ndata: ${e}\n\n`))
      .join(''),
  )
}

/** What a protocol can say of `s`: Anthropic has no free-form calls; Chat Completions no unknown item kinds. */
export function sayable(protocol: GrammarProtocol, s: Said): Said {
  const out = { ...s }
  if (protocol === 'anthropic-messages') delete out.custom
  if (protocol === 'openai-chat') delete out.unknownKind
  return out
}
