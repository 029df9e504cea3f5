import { z } from 'zod'
import { invalid } from '../errors.js'
import { errorOf, toolError, type GeneratedImage, type ServerToolKind } from './tool.js'

// `openrouter:image_generation`: the model asks for an image by describing it; Roster has a model of
// its catalogue that generates images make it (image-call.ts: OpenAI's Images API, the caller's
// route and guardrails, a generation of the request). The item carries the image (`result`, as
// OpenAI's image_generation_call does, and `imageB64` or `imageUrl`) and the prompt; the model
// reads that an image was made and shown, never the image's bytes (a megabyte of base64 is not
// something to put in front of a model). The entry's parameters beside `model` go to the Images API
// as they are (`quality`, `size`, `background`, `output_format`, `output_compression`, `moderation`…).

const Scalar = z.union([z.string().max(200), z.number(), z.boolean()])
const Parameters = z
  .object({ model: z.string().min(1).max(200).optional() })
  .catchall(z.union([Scalar, z.array(Scalar.nullable()).max(16), z.record(z.string(), Scalar.nullable()), z.null()]))
  .refine((p) => Object.keys(p).length <= 32, 'at most 32 parameters')
  .refine((p) => !('prompt' in p), 'prompt is the model’s to write, not a parameter')

export const imageGeneration: ServerToolKind<z.infer<typeof Parameters>> = {
  type: 'openrouter:image_generation',
  parameters: Parameters,
  offer(p, ctx) {
    const model = p.model ?? ctx.catalogue.models.find((m) => m.capabilities.image_generation)?.id
    if (!model)
      throw invalid(
        'openrouter:image_generation needs a model that generates images, and this Roster’s catalogue has none (capabilities.image_generation)',
      )
    const { model: _model, ...fields } = p
    return {
      type: 'openrouter:image_generation',
      definition: {
        name: 'image_generation',
        description:
          'Generates an image from a description and shows it to the user. Describe the image fully: subject, style, composition, colours, any text it holds.',
        parameters: {
          type: 'object',
          properties: { prompt: { type: 'string', description: 'What the image shows, in detail' } },
          required: ['prompt'],
          additionalProperties: false,
        },
      },
      async run(args, ctx) {
        const prompt = typeof args.prompt === 'string' ? args.prompt.trim() : ''
        if (!prompt) return toolError('prompt is empty')
        if (!ctx.generateImage) return toolError('no image can be generated here')
        ctx.progress?.('response.image_generation_call.in_progress')
        ctx.progress?.('response.image_generation_call.generating')
        let image: GeneratedImage
        try {
          image = await ctx.generateImage(model, prompt, fields)
        } catch (err) {
          return toolError(`the image could not be generated: ${(err as Error).message}`)
        } finally {
          ctx.progress?.('response.image_generation_call.completed')
        }
        return { status: 'ok', image, shown: 'The image was generated and shown to the user.' }
      },
      itemFields(args, output) {
        const image = (output as { image?: GeneratedImage } | null)?.image
        const error = errorOf(output)
        return {
          prompt: typeof args.prompt === 'string' ? args.prompt : '',
          ...(image
            ? {
                result: image.b64 ?? image.url ?? null,
                // Named as the official client's type names them on the wire (camelCase, for this item).
                ...(image.b64 ? { imageB64: image.b64 } : {}),
                ...(image.url ? { imageUrl: image.url } : {}),
                ...(image.revisedPrompt ? { revisedPrompt: image.revisedPrompt } : {}),
              }
            : {}),
          ...(error ? { error } : {}),
        }
      },
      /** What the model reads of a call: that the image was made (its bytes stay on the item). */
      modelOutput(output) {
        const o = output as { image?: GeneratedImage; shown?: string } | null
        if (!o?.image) return output
        return {
          status: 'ok',
          model: o.image.model,
          ...(o.image.url ? { image_url: o.image.url } : {}),
          ...(o.image.revisedPrompt ? { revised_prompt: o.image.revisedPrompt } : {}),
          note: o.shown,
        }
      },
    }
  },
}
