import { createHash } from 'node:crypto'

// The Responses API's namespace tools (`{type: "namespace", name, tools: [...]}`, as Codex sends
// its MCP servers' tools): a group of functions the model calls by namespace and name. Providers
// that know nothing of namespaces are offered each function under one flat name, and a call to it
// comes back to the client as the client named it: `name` and `namespace` apart.

/** A function of a namespace, as the client named it. */
export interface NamespacedName {
  namespace: string
  name: string
}

/** Provider function names: letters, digits, `_` and `-`, at most 64 (OpenAI's and Anthropic's rule). */
const MAX_NAME = 64

/** The flat name a namespace's function is offered upstream under: `<namespace>__<name>`, shortened by a digest past 64. */
export function flatName(namespace: string, name: string): string {
  const joined = `${namespace}__${name}`.replace(/[^a-zA-Z0-9_-]/g, '_')
  if (joined.length <= MAX_NAME) return joined
  const digest = createHash('sha256').update(`${namespace}\n${name}`).digest('hex').slice(0, 8)
  return `${joined.slice(0, MAX_NAME - 9)}_${digest}`
}
