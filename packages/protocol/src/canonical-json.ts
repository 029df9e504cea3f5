import { createHash } from 'node:crypto'

/** JSON with object keys sorted at every depth, so equal values always serialise identically. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value))
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value as object)
        .sort()
        .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    )
  }
  return value
}

export function sha256(...parts: string[]): Buffer {
  const h = createHash('sha256')
  for (const p of parts) h.update(p).update('\0')
  return h.digest()
}
