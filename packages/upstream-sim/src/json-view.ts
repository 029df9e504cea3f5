/**
 * A request's JSON read loosely: the simulator answers whatever a gateway sends it, so a field of
 * the wrong shape reads as absent instead of failing the request.
 */
export type Json = Record<string, unknown>

export const obj = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {})
/** The objects of a list (other entries read as empty objects); not a list: none. */
export const list = (v: unknown): Json[] => (Array.isArray(v) ? v.map(obj) : [])
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)
export const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined)
export const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : undefined
