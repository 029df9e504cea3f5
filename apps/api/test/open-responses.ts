import { readFileSync } from 'node:fs'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

// What Roster sends on /responses, checked against the published Open Responses schema
// (schemas/open-responses-openapi.json; where it came from is in schemas/README.md) by a real
// JSON Schema 2020-12 validator. Nothing of the schema is loosened. The spec's own extension points
// are added as it states them ("Extending Open Responses"): items and hosted tools of an
// implementor's own type prefixed with its slug (an item needs `id`, `type` and `status`), and
// streaming events of such a type with a `sequence_number`. Roster's are the `openrouter:` server
// tools. One event is named as an exception: `response.debug`, the official OpenRouter client's
// name for the opt-in echo of the upstream body (`debug.echo_upstream_body`).

const document = JSON.parse(readFileSync(new URL('./schemas/open-responses-openapi.json', import.meta.url), 'utf8'))
const schemas = document.components.schemas

const slugged = { type: 'string', pattern: '^[a-z][a-z0-9_-]*:[a-z0-9_.-]+$' }
const extensionItem = {
  type: 'object',
  required: ['type', 'id', 'status'],
  properties: { type: slugged, id: { type: 'string' }, status: { type: 'string' } },
}
const extensionTool = { type: 'object', required: ['type'], properties: { type: slugged } }
const extensionEvent = {
  type: 'object',
  required: ['type', 'sequence_number'],
  properties: { type: slugged, sequence_number: { type: 'integer' } },
}
const debugEvent = {
  type: 'object',
  required: ['type', 'sequence_number', 'debug'],
  properties: { type: { const: 'response.debug' }, sequence_number: { type: 'integer' }, debug: { type: 'object' } },
}

// Named exceptions (issue 43: what a provider sends arrives as it came). A provider's own items that
// Open Responses does not define reach an Open Responses client by their slug (`openai:…`, the
// extension rule above); the openai client and the official one are typed for OpenAI's own names and
// are given those (docs/gateway.md, "The provider's own items"): the OpenAI Responses item kinds of
// the openai client's ResponseOutputItem, each with its type and id, pass for what those clients read;
// nothing else does. Likewise OpenAI's annotation
// kinds beside url_citation (the official client's OpenAIResponsesAnnotation).
const providerItem = {
  type: 'object',
  required: ['type', 'id'],
  properties: {
    type: {
      enum: [
        'web_search_call',
        'file_search_call',
        'code_interpreter_call',
        'image_generation_call',
        'computer_call',
        'custom_tool_call',
        'apply_patch_call',
        'shell_call',
        'shell_call_output',
        'local_shell_call',
        'mcp_call',
        'mcp_list_tools',
        'mcp_approval_request',
      ],
    },
    id: { type: 'string' },
  },
}
const openaiAnnotation = {
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['file_citation', 'container_file_citation', 'file_path'] } },
}
schemas.ItemField = { ...schemas.ItemField, oneOf: [...schemas.ItemField.oneOf, extensionItem, providerItem] }
schemas.Annotation = { oneOf: [{ $ref: '#/components/schemas/UrlCitationBody' }, openaiAnnotation] }
schemas.Tool = { oneOf: [{ $ref: '#/components/schemas/FunctionTool' }, extensionTool] }
const streamed = document.paths['/responses'].post.responses['200'].content['text/event-stream'].schema
const StreamingEvent = { oneOf: [...streamed.oneOf, extensionEvent, debugEvent] }

// OpenAPI's own keywords (discriminator, example, x-…) are annotations to a JSON Schema validator.
const ajv = new Ajv2020({ strict: false, allErrors: true })
addFormats.default(ajv)
ajv.addSchema({
  $id: 'https://roster.local/open-responses.json',
  components: { schemas: { ...schemas, StreamingEvent } },
})

const compiled = new Map<string, ValidateFunction>()
function validator(name: string): ValidateFunction {
  let v = compiled.get(name)
  if (!v)
    compiled.set(name, (v = ajv.getSchema(`https://roster.local/open-responses.json#/components/schemas/${name}`)!))
  return v
}

/** The schema's complaints about `value` as the named component (an empty list when valid). */
export function schemaErrors(name: string, value: unknown): string[] {
  const v = validator(name)
  if (v(value)) return []
  return (v.errors ?? []).map(
    (e) =>
      `${e.instancePath || '/'} ${e.message}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''}`,
  )
}

/** A Response object (`ResponseResource`). */
export const responseErrors = (value: unknown) => schemaErrors('ResponseResource', value)

// Each standard event's component by its type, so a bad event is reported against its own schema
// rather than as "matches none of 24".
const eventSchemaByType = new Map<string, string>(
  streamed.oneOf.map((ref: { $ref: string }) => {
    const name = ref.$ref.split('/').pop()!
    return [schemas[name].properties.type.enum[0], name]
  }),
)

/** One streamed event: against its own type's schema, or else the union `text/event-stream` has. */
export const eventErrors = (value: unknown) =>
  schemaErrors(eventSchemaByType.get((value as { type?: string })?.type ?? '') ?? 'StreamingEvent', value)

/** Every event of a stream: the ones the schema refuses, with their type and first complaints. */
export function invalidEvents(events: unknown[]): { type: string; errors: string[] }[] {
  return events
    .map((e) => ({ type: (e as { type?: string }).type ?? '?', errors: eventErrors(e) }))
    .filter((r) => r.errors.length > 0)
    .map((r) => ({ ...r, errors: r.errors.slice(0, 6) }))
}

/** A body valid under the schema's request shape (`CreateResponseBody`)? */
export const requestErrors = (value: unknown) => schemaErrors('CreateResponseBody', value)

export { schemas as openResponsesSchemas }
