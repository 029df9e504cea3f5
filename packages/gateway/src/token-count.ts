import type { Tiktoken } from 'js-tiktoken/lite'
import { textTokens as estimated } from './token-estimate.js'

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

/** Counts the tokens of texts: a model family's tokenizer, or Roster's estimate. */
export interface TextCounter {
  /** The tokens of all the texts together, counted a slice at a time (the process goes on serving between slices). */
  countAll(texts: readonly string[]): Promise<number>
  /** What counted: the encoding's name, or `estimate`. */
  readonly by: Encoding | 'estimate'
}

export const ESTIMATE: TextCounter = {
  countAll: (texts) => Promise.resolve(texts.reduce((n, s) => n + estimated(s), 0)),
  by: 'estimate',
}

/** How long a count works before it lets the process serve others. */
const SLICE_MS = 4

/**
 * The characters a tokenizer is given at once. BPE's merges cost the square of a word's length, and a
 * word is whatever runs without a space: a request of a million `a`s would hold the process for
 * minutes. So text goes in pieces of at most PIECE characters, cut after a space where the piece has
 * one, else (a run of no spaces, where tokens are short anyway) at RUN characters.
 */
const PIECE = 128
const RUN = 16
/**
 * The characters one model call's count gives its tokenizer (js-tiktoken here: 15 ms of prose, 300 ms
 * of emoji); past them the rest is counted at the rate the tokenizer found so far. A silent
 * provider's call costs no more than that, whatever its size, in slices of SLICE_MS, and its count
 * stays at the model's own rate.
 */
const TOKENIZED_PER_CALL = 16 * 1024

/** A counter for one model call: the tokenizer within its budget, then the rate it found. */
class BoundedCounter implements TextCounter {
  private left = TOKENIZED_PER_CALL
  private chars = 0
  private tokens = 0

  constructor(
    private readonly t: Tiktoken,
    readonly by: Encoding,
  ) {}

  async countAll(texts: readonly string[]): Promise<number> {
    let n = 0
    let since = performance.now()
    for (const text of texts) {
      let at = 0
      while (at < text.length && this.left > 0) {
        const end = pieceEnd(text, at, Math.min(PIECE, this.left))
        // Text that looks like a special token (`<|endoftext|>`) is text the model was given, counted as such.
        const tokens = this.t.encode(text.slice(at, end), [], []).length
        n += tokens
        this.tokens += tokens
        this.chars += end - at
        this.left -= end - at
        at = end
        if (performance.now() - since > SLICE_MS) {
          await new Promise((resolve) => setImmediate(resolve))
          since = performance.now()
        }
      }
      // Past the budget: at the rate found so far.
      const rest = text.length - at
      if (rest > 0) n += this.chars ? Math.ceil((rest * this.tokens) / this.chars) : estimated(text.slice(at))
    }
    return n
  }
}

/** Where the piece of `text` from `at` ends: after its last space within `most` characters, else RUN characters on. */
function pieceEnd(text: string, at: number, most: number): number {
  let end = Math.min(text.length, at + most)
  if (end === text.length) return end
  const space = text.lastIndexOf(' ', end - 1)
  end = space >= at ? space + 1 : Math.min(end, at + RUN)
  // Not between the two halves of a character outside the BMP.
  return /[\udc00-\udfff]/.test(text[end]!) ? end + 1 : end
}

/** The counter for one model call: its family's tokenizer where one is published, else the estimate. */
export async function counterFor(upstreamModel: string): Promise<TextCounter> {
  const encoding = encodingOf(upstreamModel)
  if (!encoding) return ESTIMATE
  try {
    return new BoundedCounter(await tokenizer(encoding), encoding)
  } catch {
    return ESTIMATE
  }
}
