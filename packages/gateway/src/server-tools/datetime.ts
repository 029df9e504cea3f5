import { z } from 'zod'
import type { ServerToolKind } from './tool.js'

/** Whether Intl knows `zone` (an IANA name such as Europe/Paris). */
function knownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

const Parameters = z.object({
  timezone: z.string().max(64).refine(knownZone, 'is not an IANA time zone (e.g. Europe/Paris)').optional(),
})

/** `openrouter:datetime`: the current date and time, in the entry's time zone unless the model names one. */
export const datetime: ServerToolKind<z.infer<typeof Parameters>> = {
  type: 'openrouter:datetime',
  parameters: Parameters,
  offer: (parameters) => ({
    type: 'openrouter:datetime',
    definition: {
      name: 'datetime',
      description: `The current date and time, in an IANA time zone (${parameters.timezone ?? 'UTC'} unless given).`,
      parameters: {
        type: 'object',
        properties: { timezone: { type: 'string', description: 'IANA time zone, e.g. Europe/Paris' } },
        additionalProperties: false,
      },
    },
    async run(args) {
      const asked = typeof args.timezone === 'string' && args.timezone ? args.timezone : (parameters.timezone ?? 'UTC')
      const now = new Date()
      const local = (timeZone: string) =>
        new Intl.DateTimeFormat('sv-SE', { timeZone, dateStyle: 'short', timeStyle: 'medium' }).format(now)
      const base = { datetime: now.toISOString(), unix: Math.floor(now.getTime() / 1000) }
      if (knownZone(asked)) return { ...base, timezone: asked, local: local(asked) }
      // The model still gets the time, and learns why it is not in the zone it asked for.
      return { ...base, timezone: 'UTC', local: local('UTC'), note: `unknown time zone ${asked}; UTC shown` }
    },
    itemFields: (_args, output) => {
      const o = output as { datetime?: string; timezone?: string }
      return { datetime: o.datetime ?? '', timezone: o.timezone ?? 'UTC' }
    },
  }),
}
