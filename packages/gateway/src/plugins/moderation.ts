import { z } from 'zod'
import { gatewayError, invalid } from '../errors.js'
import type { ModerationInput } from '../moderation.js'
import { inputItems, isMessage, type ResponsesRequest } from '../request.js'
import type { Plugin } from './plugin.js'

// `moderation`: the request's input is checked by a moderation service before any model sees it
// (moderation.ts); input it flags is refused 403 as OpenRouter refuses it, with the categories
// (`reasons`), the start of the text flagged (`flagged_input`, 100 characters), and the provider
// and model the request was for. Nothing reaches a provider, nothing is charged.

type Part = { type?: unknown; text?: unknown; image_url?: unknown }

/** A message's text and images, as the moderation service reads them. */
function moderated(content: unknown): ModerationInput[number] {
  if (typeof content === 'string') return { text: content, images: [] }
  const parts = Array.isArray(content) ? (content as Part[]) : []
  return {
    text: parts.flatMap((p) => (typeof p?.text === 'string' && p.type !== 'output_text' ? [p.text] : [])).join('\n'),
    images: parts.flatMap((p) => {
      const url = typeof p?.image_url === 'string' ? p.image_url : (p?.image_url as { url?: unknown } | undefined)?.url
      return p?.type === 'input_image' && typeof url === 'string' ? [url] : []
    }),
  }
}

/** What the caller wrote: the instructions and its own messages (the assistant's turns are models' output). */
export function moderationInput(req: ResponsesRequest): ModerationInput {
  const messages = inputItems(req.input).flatMap((i) =>
    isMessage(i) && i.role !== 'assistant' ? [moderated(i.content)] : [],
  )
  return req.instructions ? [{ text: req.instructions, images: [] }, ...messages] : messages
}

export const moderationPlugin: Plugin<Record<string, never>> = {
  id: 'moderation',
  parameters: z.object({}),
  prepare(req, _p, engine) {
    if (!engine.moderation)
      throw invalid('/plugins moderation needs a moderation service, and this Roster has none (MODERATION_URL)')
    return req
  },
  async check(run, _p, engine) {
    const inputs = moderationInput(run.req)
    const flagged = await engine.moderation!.flagged(inputs, run.signal)
    if (!flagged) return
    const candidate = run.route.candidates[0]
    throw gatewayError(
      'permission_denied',
      `the input was flagged by moderation${flagged.reasons.length ? ` (${flagged.reasons.join(', ')})` : ''}`,
      {
        metadata: {
          reasons: flagged.reasons,
          flagged_input: (inputs[flagged.index]?.text ?? '').slice(0, 100),
          provider_name: candidate?.endpoint.provider ?? null,
          model_slug: candidate?.model.id ?? run.req.model ?? null,
        },
      },
    )
  },
}
