import { z } from 'zod'
import { ApiConfig, CliConfig, RuntimeConfig, StartConfig, WorkerConfig } from '@roster/protocol'

// docs/settings.md, written from the schemas every process parses its environment with: the
// reference cannot say what the code does not (settings-reference.test.ts fails when they differ;
// `npm run -s docs:settings` writes it again).

const PROCESSES: [string, z.ZodObject][] = [
  ['api', ApiConfig],
  ['worker', WorkerConfig],
  ['runtime', RuntimeConfig],
  ['admin CLI', CliConfig],
  ['`npm start`', StartConfig],
]

interface Use {
  process: string
  description: string | undefined
  default: string
}

/** What a setting is when unset, as its schema fills it in (before any transform). */
function defaultOf(schema: z.ZodType): unknown {
  if (schema instanceof z.ZodDefault) return (schema.def as { defaultValue: unknown }).defaultValue
  if (schema instanceof z.ZodPipe) return defaultOf(schema.in as z.ZodType)
  return undefined
}

function shown(value: unknown): string {
  if (value === undefined) return 'unset'
  if (Array.isArray(value) && value.length === 0) return 'empty'
  if (value === '') return 'empty'
  return `\`${String(value)}\``
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ')

/** The settings reference, as Markdown. */
export function settingsReference(): string {
  const uses = new Map<string, Use[]>()
  for (const [process, schema] of PROCESSES) {
    for (const [name, field] of Object.entries(schema.shape as Record<string, z.ZodType>)) {
      const list = uses.get(name) ?? []
      list.push({ process, description: field.description, default: shown(defaultOf(field)) })
      uses.set(name, list)
    }
  }
  const rows = [...uses].map(([name, list]) => {
    const byValue = (pick: (u: Use) => string) => {
      const distinct = [...new Set(list.map(pick))]
      return distinct.length === 1
        ? distinct[0]!
        : distinct
            .map(
              (v) =>
                `${v} (${list
                  .filter((u) => pick(u) === v)
                  .map((u) => u.process)
                  .join(', ')})`,
            )
            .join('; ')
    }
    const described = list.filter((u) => u.description)
    const meaning = [...new Set(described.map((u) => u.description!))]
    const text =
      meaning.length <= 1
        ? (meaning[0] ?? '')
        : meaning
            .map(
              (m) =>
                `${described
                  .filter((u) => u.description === m)
                  .map((u) => u.process)
                  .join(', ')}: ${m}`,
            )
            .join(' ')
    return `| \`${name}\` | ${cell(byValue((u) => u.default))} | ${list.map((u) => u.process).join(', ')} | ${cell(text)} |`
  })
  return [
    '# Settings',
    '',
    '<!-- Written by `npm run -s docs:settings` from packages/protocol/src/config/ (a table per process); edit the schema, not this page. -->',
    '',
    'Every process reads its settings from the environment once, at start-up, through one zod schema',
    '(`packages/protocol/src/config/`, a file per process); a bad value stops it with a message naming the variable. An empty',
    'value counts as unset.',
    '',
    '| variable | default | read by | meaning |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n')
}

/** Settings whose schema says nothing about them (the reference would have an empty row). */
export function undescribedSettings(): string[] {
  return PROCESSES.flatMap(([process, schema]) =>
    Object.entries(schema.shape as Record<string, z.ZodType>)
      .filter(([, field]) => !field.description)
      .map(([name]) => `${name} (${process})`),
  )
}
