import { z } from 'zod'

// The Responses request (POST /responses, and the body a preset is made from). Fields the spec
// names are validated with their limits; other fields the official clients send are accepted as
// they are (the object is loose), so a client that adds a field does not break.

const MetadataKey = z
  .string()
  .min(1)
  .max(64)
  .refine((k) => !/[[\]]/.test(k), 'metadata keys may not contain brackets')

export const Metadata = z
  .record(MetadataKey, z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, 'metadata holds at most 16 pairs')

export const StopCondition = z.discriminatedUnion('type', [
  z.object({ type: z.literal('step_count_is'), step_count: z.int().min(1) }),
  z.object({ type: z.literal('max_cost'), max_cost_in_dollars: z.number().positive() }),
  z.object({ type: z.literal('finish_reason_is'), reason: z.string().min(1) }),
  z.object({ type: z.literal('has_tool_call'), tool_name: z.string().min(1) }),
  z.object({ type: z.literal('max_tokens_used'), max_tokens: z.int().min(1) }),
])

/**
 * A field the Open Responses schema lets a client send as null: null means "not given", so the rest
 * of Roster sees one absent value, never two.
 */
const nullMeansAbsent = <T extends z.ZodType>(type: T) =>
  type
    .nullable()
    .transform((v) => v ?? undefined)
    .optional()

export const ServiceTier = z.enum(['auto', 'default', 'fast', 'flex', 'priority', 'scale', 'ultrafast'])

/** A function tool; a namespace tool's functions are checked by it too (run-setup.ts). */
export const FunctionTool = z.looseObject({
  type: z.literal('function'),
  name: z.string().min(1).max(64),
  description: z.string().nullable().optional(),
  parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  strict: z.boolean().nullable().optional(),
})
/** Function tools are checked; other kinds pass here and are accepted or refused by name later. */
const Tool = z.union([
  FunctionTool,
  z.looseObject({ type: z.string().min(1) }).refine((t) => t.type !== 'function', 'a function tool needs a name'),
])

const ToolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  z.looseObject({ type: z.literal('function'), name: z.string().min(1) }),
  z.looseObject({ type: z.string().min(1) }),
])

const Part = z.looseObject({ type: z.string().min(1) })
const MessageItem = z.looseObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'system', 'assistant', 'developer']),
  content: z.union([z.string(), z.array(Part), z.null()]),
})
const OtherItem = z.looseObject({ type: z.string().min(1) })
/** A reference to a stored item (Open Responses' ItemReferenceParam): nothing is stored here to refer to. */
const ItemReference = z
  .looseObject({ type: z.literal('item_reference').nullable().optional(), id: z.string() })
  .refine(() => false, 'item references are not served: responses are not stored, so send the item itself')
export const InputItem = z.union([MessageItem, OtherItem, ItemReference])
/** An item of the request's input: a message, or another item by its `type`, other fields as sent. */
export type InputItem = z.infer<typeof InputItem>
export type MessageInput = z.infer<typeof MessageItem>

/** A message item (with or without `type: "message"`), as opposed to a call, a result or another kind. */
export const isMessage = (item: InputItem): item is MessageInput =>
  typeof item.role === 'string' && (item.type === undefined || item.type === 'message')

/** The input as items: a string is one user message. */
export const inputItems = (input: ResponsesRequest['input']): InputItem[] =>
  typeof input === 'string' ? [{ role: 'user', content: input }] : (input ?? [])

/** Every field with its limits, before the rules that tie fields together. */
export const ResponsesFields = z.looseObject({
  model: nullMeansAbsent(z.string().min(1).max(200)),
  models: z.array(z.string().min(1).max(200)).max(16).optional(),
  input: nullMeansAbsent(z.union([z.string(), z.array(InputItem)])),
  instructions: z.string().nullable().optional(),
  stream: z.boolean().default(false),
  store: z.boolean().optional(),
  max_output_tokens: z.int().min(1).nullable().optional(),
  max_tool_calls: z.int().min(1).max(30).nullable().optional(),
  stop_server_tools_when: z.array(StopCondition).min(1, 'give at least one condition').optional(),
  stop: z
    .union([z.string(), z.array(z.string()).max(4, 'at most 4 stop sequences')])
    .nullable()
    .optional(),
  metadata: Metadata.nullable().optional(),
  session_id: z.string().max(256).optional(),
  user: z.string().max(256).optional(),
  safety_identifier: z.string().max(64).nullable().optional(),
  background: z
    .boolean()
    .nullable()
    .refine(
      (v) => v !== true,
      'responses are not stored, so none runs in the background; stream it instead (stream: true)',
    )
    .optional(),
  stream_options: z.looseObject({ include_obfuscation: z.boolean().optional() }).nullable().optional(),
  previous_response_id: z
    .unknown()
    .refine(
      (v) => v === null || v === undefined,
      'responses are not stored, so previous_response_id must be null; send the whole conversation in input',
    )
    .optional(),
  service_tier: ServiceTier.nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().min(0).max(1).nullable().optional(),
  top_k: z.int().min(0).optional(),
  frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
  presence_penalty: z.number().min(-2).max(2).nullable().optional(),
  top_logprobs: z.int().min(0).max(20).nullable().optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  tools: nullMeansAbsent(z.array(Tool).max(128)),
  tool_choice: nullMeansAbsent(ToolChoice),
  text: nullMeansAbsent(
    z.looseObject({
      format: nullMeansAbsent(z.looseObject({ type: z.enum(['text', 'json_object', 'json_schema']) })),
      verbosity: z.enum(['low', 'medium', 'high', 'xhigh', 'max']).nullable().optional(),
    }),
  ),
  reasoning: z
    .looseObject({
      effort: z.enum(['max', 'xhigh', 'high', 'medium', 'low', 'minimal', 'none']).nullable().optional(),
      summary: z.enum(['auto', 'concise', 'detailed']).nullable().optional(),
      enabled: z.boolean().nullable().optional(),
      max_tokens: z.int().min(0).nullable().optional(),
    })
    .nullable()
    .optional(),
  include: z
    .array(
      z.enum([
        'file_search_call.results',
        'message.input_image.image_url',
        'computer_call_output.output.image_url',
        'reasoning.encrypted_content',
        'code_interpreter_call.outputs',
        'message.output_text.logprobs',
      ]),
    )
    .nullable()
    .optional(),
  modalities: z.array(z.enum(['text', 'image'])).optional(),
  image_config: z.record(z.string(), z.unknown()).optional(),
  prompt_cache_key: z.string().max(256).nullable().optional(),
  prompt_cache_options: z
    .looseObject({ mode: z.literal('explicit'), ttl: z.string().optional() })
    .nullable()
    .optional(),
  cache_control: z.looseObject({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() }).optional(),
  provider: z.looseObject({}).nullable().optional(),
  plugins: z.array(z.looseObject({ id: z.string().min(1) })).optional(),
  /** The deprecated routing alias: fallback → provider.sort.partition "model", sort → "none". */
  route: z.enum(['fallback', 'sort']).nullable().optional(),
  trace: z.record(z.string(), z.unknown()).optional(),
  truncation: z.enum(['auto', 'disabled']).nullable().optional(),
  debug: z.looseObject({ echo_upstream_body: z.boolean().optional() }).optional(),
  /** A preset by slug (also `model: "@preset/<slug>"` or `"<model>@preset/<slug>"`). */
  preset: z.string().min(1).max(64).optional(),
})

/** The rules that tie fields together. */
function crossFieldRules(req: z.infer<typeof ResponsesFields>, ctx: z.RefinementCtx) {
  if (req.model === undefined && !req.models?.length && !req.preset)
    ctx.addIssue({ code: 'custom', path: ['model'], message: 'give model, models or preset' })
  if (req.debug?.echo_upstream_body && !req.stream) {
    ctx.addIssue({
      code: 'custom',
      path: ['debug', 'echo_upstream_body'],
      message: 'echo_upstream_body works with stream: true only',
    })
  }
}

export const ResponsesRequest = ResponsesFields.superRefine(crossFieldRules)
export type ResponsesRequest = z.infer<typeof ResponsesRequest>

/**
 * A validator of a loose object schema that checks only the fields a request carries (and those
 * with defaults or that are required), with the same answer as the whole schema. The whole schema
 * runs all of its fields on every request, an object and an array each even when the field is
 * absent (~3 KB and several µs a request under load, measured); an absent optional field can
 * neither fail nor add anything. The schemas are cached by their set of fields, which is the same
 * few sets for a given client; a client inventing new sets costs a schema each, and the cache is
 * bounded. Every door's request is parsed this way.
 */
export function sparseParser<T>(
  shape: Record<string, z.ZodType>,
  refine?: (value: T, ctx: z.RefinementCtx) => void,
): (input: unknown) => z.ZodSafeParseResult<T> {
  const names = Object.keys(shape)
  // Each field's bit in a number, so a set of fields is one exact integer (53 bits hold them).
  if (names.length > 53) throw new Error('a sparse schema holds at most 53 fields')
  const bit = new Map(names.map((name, i) => [name, 2 ** i]))
  /** Fields an absent value does not simply pass (a default to fill in, or a required field) are always checked. */
  const always = new Set(
    names.filter((name) => {
      const absent = shape[name]!.safeParse(undefined)
      return !absent.success || absent.data !== undefined
    }),
  )
  const make = (fields: string[]) => {
    const object = z.looseObject(Object.fromEntries(fields.map((name) => [name, shape[name]!])))
    // The shape's fields are not typed one by one here: T is what the caller's shape describes.
    const typed = object as unknown as z.ZodType<T>
    return refine ? typed.superRefine(refine) : typed
  }
  const full = make(names)
  const cache = new Map<number, z.ZodType<T>>()
  return (input) => {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) return full.safeParse(input)
    let set = 0
    for (const key in input) set += bit.get(key) ?? 0
    let schema = cache.get(set)
    if (!schema) {
      schema = make(names.filter((name, i) => always.has(name) || Math.floor(set / 2 ** i) % 2 === 1))
      if (cache.size >= 256) cache.clear()
      cache.set(set, schema)
    }
    return schema.safeParse(input)
  }
}

/** `ResponsesRequest.safeParse`, checking only the fields the request carries (sparseParser). */
export const parseResponsesRequest = sparseParser<ResponsesRequest>(ResponsesFields.shape, crossFieldRules)

/** max_tool_calls: default 30, which is also the most; ignored when stop conditions are given. */
/**
 * Whether the output text's log probabilities are asked for (`include` names them, or
 * `top_logprobs` asks for alternatives), and with how many alternatives per token; undefined if not.
 */
export function logprobsWanted(req: ResponsesRequest): number | undefined {
  if (req.include?.includes('message.output_text.logprobs')) return req.top_logprobs ?? 0
  return req.top_logprobs ? req.top_logprobs : undefined
}

export function maxToolSteps(req: ResponsesRequest): number | undefined {
  return req.stop_server_tools_when ? undefined : (req.max_tool_calls ?? 30)
}

/** `fast` is an alias of `priority`; `ultrafast` prefers ultrafast endpoints, then priority, then default. */
export function tierPreference(tier: ResponsesRequest['service_tier']): string[] {
  switch (tier) {
    case 'fast':
    case 'priority':
      return ['priority', 'default']
    case 'ultrafast':
      return ['ultrafast', 'priority', 'default']
    case 'flex':
    case 'scale':
      return [tier, 'default']
    default:
      return ['default']
  }
}

/** The deprecated `route` alias, mapped onto provider.sort.partition. */
export function partitionFromRoute(route: ResponsesRequest['route']): 'model' | 'none' | undefined {
  return route === 'fallback' ? 'model' : route === 'sort' ? 'none' : undefined
}

/** The sticky routing key: the body's session_id beats the x-session-id header. */
export function sessionKey(req: ResponsesRequest, header: string | undefined): string | undefined {
  return req.session_id ?? (header && header.length <= 256 ? header : undefined)
}
