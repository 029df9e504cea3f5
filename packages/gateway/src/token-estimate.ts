import type { ResponsesRequest } from './request.js'

// Roster's own estimate of a request's input tokens, where no provider has counted them (yet): the
// Messages door's message_start before a provider that reports its count at the end, and
// count_tokens for a model whose provider cannot count. It is an estimate, documented as one
// (docs/gateway.md): about four bytes of UTF-8 text a token, as the common BPE tokenizers average
// on English and code, a few tokens a message for the roles and separators around it, and an
// image at what a 512-pixel tile costs with OpenAI's models. No model's tokenizer is run: which
// one a model uses is often not published, and tokenizing every request would cost the gateway
// more latency than the estimate is worth.

const BYTES_A_TOKEN = 4
const TOKENS_A_MESSAGE = 4
const TOKENS_AN_IMAGE = 765

/** Roster's estimate of the tokens in this many bytes of UTF-8 text. */
export const tokensOfBytes = (bytes: number) => Math.ceil(bytes / BYTES_A_TOKEN)

/** Roster's estimate of the tokens in a text. */
export const textTokens = (s: string) => tokensOfBytes(Buffer.byteLength(s, 'utf8'))

/** Counts a text's tokens: the estimate, or a model family's tokenizer (token-count.ts). */
export type CountText = (text: string) => number

/** An estimate of the tokens a value's text holds (every string in it, each counted by `count`; images and files by their kind). */
function valueTokens(v: unknown, count: CountText, depth = 0): number {
  if (typeof v === 'string') return count(v)
  if (!v || typeof v !== 'object' || depth > 64) return 0
  if (Array.isArray(v)) {
    let n = 0
    for (const x of v) n += valueTokens(x, count, depth + 1)
    return n
  }
  const o = v as Record<string, unknown>
  // An image's data or address is not its tokens.
  if (o.type === 'input_image' || o.type === 'image' || o.type === 'image_url') return TOKENS_AN_IMAGE
  let n = 0
  for (const [k, x] of Object.entries(o)) {
    // Names of kinds and ids are not sent to the model as text; a file's base64 is ~3/4 its length in bytes.
    if (k === 'type' || k === 'id' || k === 'call_id' || k === 'status' || k === 'cache_control') continue
    if (k === 'file_data' && typeof x === 'string') n += Math.ceil((x.length * 3) / 4 / BYTES_A_TOKEN)
    else n += valueTokens(x, count, depth + 1)
  }
  return n
}

/**
 * Roster's estimate of a request's input tokens: its instructions, input items and tool definitions,
 * each text counted by `count` (the estimate, unless a model's tokenizer is given).
 */
export function estimateInputTokens(
  req: Pick<ResponsesRequest, 'input' | 'instructions' | 'tools'>,
  count: CountText = textTokens,
): number {
  const items = typeof req.input === 'string' ? [req.input] : (req.input ?? [])
  let n = req.instructions ? count(req.instructions) + TOKENS_A_MESSAGE : 0
  for (const item of items) n += valueTokens(item, count) + TOKENS_A_MESSAGE
  if (req.tools?.length) n += valueTokens(req.tools, count)
  return Math.max(1, n)
}
