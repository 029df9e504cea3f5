import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'
import { z } from 'zod'
import { invalid } from './errors.js'
import { InputItem, inputItems, isMessage, type ResponsesRequest } from './request.js'
import type { ResponseObject, ResponseUsage } from './wire.js'

// POST /responses/compact (Open Responses' CompactResponseMethodPublicBody → CompactResource): a
// conversation given whole is summarised by the model, like any request, and handed back as the
// user's own messages plus one `compaction` item. Nothing is stored: the item carries the summary
// itself, sealed with a key of this deployment, and a later request that sends the item back has
// it opened and read to the model in place of the turns it replaced.

export const CompactRequest = z.looseObject({
  model: z.string().min(1).max(200),
  input: z
    .union([z.string(), z.array(InputItem)])
    .nullable()
    .transform((v) => v ?? undefined)
    .optional(),
  previous_response_id: z
    .unknown()
    .refine(
      (v) => v === null || v === undefined,
      'responses are not stored, so previous_response_id must be null; send the whole conversation in input',
    )
    .optional(),
  instructions: z.string().nullable().optional(),
  prompt_cache_key: z.string().max(64).nullable().optional(),
})
export type CompactRequest = z.infer<typeof CompactRequest>

const INSTRUCTIONS =
  'You compact conversations. Summarise the conversation so far so that it can continue from your summary alone: ' +
  'keep every decision, fact, name, number, open question, tool result and commitment that later turns may need; ' +
  'drop pleasantries and repetition. Write the summary only, in the language of the conversation.'
const ASK = 'Summarise the conversation above now, as instructed.'
const PREFIX = 'Summary of the earlier conversation (compacted):\n'

/** Seals and opens compaction items with a key derived from the deployment's own. */
export class CompactionSeal {
  private readonly key: Buffer
  constructor(secret: Buffer) {
    this.key = createHmac('sha256', secret).update('roster compaction v1').digest()
  }

  seal(text: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()])
    return `rcmp1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`
  }

  /** The summary, or undefined for content this deployment did not seal (or that was altered). */
  open(sealed: string): string | undefined {
    if (!sealed.startsWith('rcmp1.')) return undefined
    const raw = Buffer.from(sealed.slice(6), 'base64url')
    if (raw.length < 28) return undefined
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12))
      decipher.setAuthTag(raw.subarray(12, 28))
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')
    } catch {
      return undefined
    }
  }

  /**
   * A request whose input carries compaction items, with each replaced by the summary it sealed
   * (a user message); the request itself when it has none. An item this deployment cannot open is
   * a 400 naming it.
   */
  expand<T extends Pick<ResponsesRequest, 'input'>>(req: T): T {
    const input = req.input
    if (!Array.isArray(input) || !input.some((i) => i.type === 'compaction')) return req
    const items = input.map((item, i): InputItem => {
      if (item.type !== 'compaction') return item
      const text = typeof item.encrypted_content === 'string' ? this.open(item.encrypted_content) : undefined
      if (text === undefined)
        throw invalid(
          `/input/${i} is a compaction item this Roster cannot read (made by another deployment, with another key, or altered); compact the conversation here again`,
        )
      return { role: 'user', content: PREFIX + text }
    })
    return { ...req, input: items }
  }
}

/** The model request that makes the summary. */
export function compactionRequest(req: CompactRequest): ResponsesRequest {
  const conversation = inputItems(req.input)
  const instructions = req.instructions
    ? `${INSTRUCTIONS}\n\nThe conversation ran under these instructions:\n${req.instructions}`
    : INSTRUCTIONS
  return {
    model: req.model,
    instructions,
    input: [...conversation, { role: 'user', content: ASK }],
    stream: false,
    ...(req.prompt_cache_key ? { prompt_cache_key: req.prompt_cache_key } : {}),
  } as ResponsesRequest
}

/** Open Responses' CompactResource. */
export interface CompactResource {
  id: string
  object: 'response.compaction'
  created_at: number
  output: (
    | {
        type: 'message'
        id: string
        status: 'completed'
        role: 'user'
        content: { type: string; [field: string]: unknown }[]
      }
    | { type: 'compaction'; id: string; encrypted_content: string }
  )[]
  usage: ResponseUsage
}

/** CompactResource: the user's messages as they were, then the compaction item. */
export function compactResource(
  req: CompactRequest,
  response: ResponseObject,
  seal: CompactionSeal,
  ids: { message: () => string; compaction: () => string },
): CompactResource {
  const kept: CompactResource['output'] = []
  for (const item of inputItems(req.input)) {
    if (!isMessage(item) || item.role !== 'user') continue
    const content =
      typeof item.content === 'string' ? [{ type: 'input_text', text: item.content }] : (item.content ?? [])
    kept.push({
      type: 'message',
      id: typeof item.id === 'string' ? item.id : ids.message(),
      status: 'completed',
      role: 'user',
      content,
    })
  }
  const usage = response.usage as ResponseUsage
  return {
    id: response.id,
    object: 'response.compaction',
    created_at: response.created_at,
    output: [...kept, { type: 'compaction', id: ids.compaction(), encrypted_content: seal.seal(response.output_text) }],
    usage,
  }
}
