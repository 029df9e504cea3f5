import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Ajv, type ValidateFunction } from 'ajv'
import { createGenerator } from 'ts-json-schema-generator'

// What the clients' own type declarations say a reply is, as JSON Schemas generated from those
// declarations (ts-json-schema-generator), so Roster's replies are checked against the clients'
// types, not against our reading of them. Extra keys are allowed: the types describe what a client
// reads, and gateways add their own (cost, routing metadata).

const require = createRequire(import.meta.url)
/** A package's folder, found from its entry point (not every package exports its package.json). */
function packageDir(name: string): string {
  let dir = dirname(require.resolve(name))
  while (!dir.endsWith(`node_modules/${name}`)) dir = dirname(dir)
  return dir
}

const SOURCES = {
  anthropic: () => join(packageDir('@anthropic-ai/sdk'), 'resources/messages/messages.d.ts'),
  openai: () => join(packageDir('openai'), 'resources/chat/completions/completions.d.ts'),
} as const

/**
 * Keys a client's declarations require that the provider's API itself leaves out, so a reply the API
 * would send passes: the Anthropic API sends a text block's `citations` only when there are citations
 * (its client types it `TextCitation[] | null`, required), and a client that reads the API rather than
 * those types (@ai-sdk/anthropic 3) refuses the `null`. Each entry says the API's word against the type's.
 */
const SENT_ONLY_WHEN_SET: Partial<Record<keyof typeof SOURCES, Record<string, string[]>>> = {
  anthropic: { TextBlock: ['citations'] },
}

function relax(client: keyof typeof SOURCES, schema: Record<string, unknown>) {
  const definitions = (schema.definitions ?? {}) as Record<string, { required?: string[] }>
  for (const [type, keys] of Object.entries(SENT_ONLY_WHEN_SET[client] ?? {})) {
    const def = definitions[type]
    if (def?.required) def.required = def.required.filter((k) => !keys.includes(k))
  }
  return schema
}

const generators = new Map<string, ReturnType<typeof createGenerator>>()
const ajv = new Ajv({ allErrors: true, strict: false })
const compiled = new Map<string, ValidateFunction>()

/** The JSON Schema of one exported type of a client's declarations. */
export function clientSchema(client: keyof typeof SOURCES, type: string): Record<string, unknown> {
  let generator = generators.get(client)
  if (!generator) {
    generator = createGenerator({
      path: SOURCES[client](),
      type: '*',
      skipTypeCheck: true,
      expose: 'all',
      topRef: false,
      jsDoc: 'none',
      additionalProperties: true,
    })
    generators.set(client, generator)
  }
  return relax(client, generator.createSchema(type) as Record<string, unknown>)
}

/** A validator for one exported type of a client's declarations (e.g. openai's ChatCompletionChunk). */
export function clientType(client: keyof typeof SOURCES, type: string): (value: unknown) => string[] {
  const key = `${client}:${type}`
  let validate = compiled.get(key)
  if (!validate) {
    validate = ajv.compile(clientSchema(client, type))
    compiled.set(key, validate)
  }
  const check = validate
  return (value) =>
    check(value)
      ? []
      : (check.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`)
}
