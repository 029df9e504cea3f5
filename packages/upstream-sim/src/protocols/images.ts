import { createHash } from 'node:crypto'
import { deflateSync } from 'node:zlib'
import { countTokens } from '../content.js'

// OpenAI's Images API as the simulator answers it (`POST /v1/images/generations`, as OpenAI's API
// reference documents it for gpt-image-1): `{model, prompt, n?, size?, quality?, background?,
// output_format?, …}` → `{created, data: [{b64_json, revised_prompt}], usage}`. The image is a real
// PNG of one pixel whose colour comes from the prompt, so two prompts make two images; its usage is
// the prompt's tokens in, and gpt-image-1's documented output tokens for a square image of the quality asked.

export const IMAGES_PATH = '/v1/images/generations'

/** gpt-image-1's output tokens for a 1024×1024 image, by quality (OpenAI's pricing guide). */
const OUTPUT_TOKENS: Record<string, number> = { low: 272, medium: 1056, high: 4160, auto: 1056 }

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
function crc32(buf: Buffer): number {
  let crc = 0xffffffff
  for (const byte of buf) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}
function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const typed = Buffer.concat([Buffer.from(type, 'latin1'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(typed))
  return Buffer.concat([length, typed, crc])
}

/** A one-pixel PNG of the prompt's colour. */
export function promptImage(prompt: string): Buffer {
  const [r, g, b] = createHash('sha256').update(prompt).digest()
  const header = Buffer.alloc(13)
  header.writeUInt32BE(1, 0)
  header.writeUInt32BE(1, 4)
  header[8] = 8 // bit depth
  header[9] = 2 // truecolour
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.from([0, r!, g!, b!]))),
    chunk('IEND', Buffer.alloc(0)),
  ])
}

/** The request's refusal (OpenAI's words), or its answer. */
export function imagesAnswer(body: Record<string, unknown>): { status: number; body: unknown } {
  const prompt = body.prompt
  if (typeof prompt !== 'string' || !prompt)
    return {
      status: 400,
      body: {
        error: {
          message: "Missing required parameter: 'prompt'.",
          type: 'invalid_request_error',
          param: 'prompt',
          code: 'missing_required_parameter',
        },
      },
    }
  const n = typeof body.n === 'number' ? body.n : 1
  if (!Number.isInteger(n) || n < 1 || n > 10)
    return {
      status: 400,
      body: {
        error: {
          message: 'n must be between 1 and 10',
          type: 'invalid_request_error',
          param: 'n',
          code: 'invalid_value',
        },
      },
    }
  const quality = typeof body.quality === 'string' ? body.quality : 'auto'
  const input = countTokens(prompt)
  const output = (OUTPUT_TOKENS[quality] ?? 1056) * n
  return {
    status: 200,
    body: {
      created: Math.floor(Date.now() / 1000),
      background: body.background ?? 'opaque',
      output_format: body.output_format ?? 'png',
      quality: quality === 'auto' ? 'medium' : quality,
      size: body.size ?? '1024x1024',
      data: Array.from({ length: n }, (_, i) => ({
        b64_json: promptImage(i ? `${prompt}#${i}` : prompt).toString('base64'),
        revised_prompt: prompt,
      })),
      usage: {
        input_tokens: input,
        input_tokens_details: { text_tokens: input, image_tokens: 0 },
        output_tokens: output,
        total_tokens: input + output,
      },
    },
  }
}
