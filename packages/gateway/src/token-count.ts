import type { Tiktoken } from 'js-tiktoken/lite'
import { tokensOfBytes } from './token-estimate.js'

// Roster's own count of a model call's tokens, for a call whose provider reported none (a Chat
// Completions stream from a server that ignores `stream_options`, a provider that puts its usage
// where no protocol says): with the model family's own tokenizer where it is published (OpenAI's
// encodings, through js-tiktoken), else Roster's documented estimate (token-estimate.ts). Only a
// silent provider's calls come here, so a tokenizer's cost is paid rarely; its tables (a few MB) are
// loaded on the first such call, not at start-up.

export type Encoding = 'o200k_base' | 'cl100k_base'

/** OpenAI's model families and the encodings their tokenizers use (tiktoken's model table, by prefix). */
const FAMILIES: [RegExp, Encoding][] = [
  [/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o1|o3|o4|chatgpt-4o|codex-)/, 'o200k_base'],
  [/^(gpt-4|gpt-3\.5|gpt-35|text-embedding-3|text-embedding-ada-002)/, 'cl100k_base'],
]

/** The published encoding of an upstream model's family (a provider's prefix, `openai/gpt-4o`, set aside), if any. */
export function encodingOf(upstreamModel: string): Encoding | undefined {
  const name = upstreamModel.toLowerCase().replace(/^.*\//, '')
  return FAMILIES.find(([family]) => family.test(name))?.[1]
}

const loading = new Map<Encoding, Promise<Tiktoken>>()

function tokenizer(encoding: Encoding): Promise<Tiktoken> {
  let t = loading.get(encoding)
  if (!t) {
    t = (async () => {
      const { Tiktoken } = await import('js-tiktoken/lite')
      const ranks =
        encoding === 'o200k_base'
          ? (await import('js-tiktoken/ranks/o200k_base')).default
          : (await import('js-tiktoken/ranks/cl100k_base')).default
      return new Tiktoken(ranks)
    })()
    // A failed load is tried again next time, not remembered.
    t.catch(() => loading.delete(encoding))
    loading.set(encoding, t)
  }
  return t
}

/** Counts the tokens of a text: a model family's tokenizer, or Roster's estimate. */
export interface TextCounter {
  count(text: string): number
  /** What counted: the encoding's name, or `estimate`. */
  readonly by: Encoding | 'estimate'
}

export const ESTIMATE: TextCounter = { count: (s) => tokensOfBytes(Buffer.byteLength(s, 'utf8')), by: 'estimate' }

/** The counter for a model: its family's tokenizer where one is published, else the estimate. */
export async function counterFor(upstreamModel: string): Promise<TextCounter> {
  const encoding = encodingOf(upstreamModel)
  if (!encoding) return ESTIMATE
  try {
    const t = await tokenizer(encoding)
    // Text that looks like a special token (`<|endoftext|>`) is text the model was given, counted as such.
    return { count: (s) => (s ? t.encode(s, [], []).length : 0), by: encoding }
  } catch {
    return ESTIMATE
  }
}
