import { RE2JS } from 're2js'
import {
  BUILTIN_DETECTORS,
  type AppliedGuardrail,
  type BuiltinDetector,
  type DataRegion,
  type FilterAction,
} from '@roster/protocol'
import { gatewayError } from './errors.js'
import { isMessage, type InputItem, type ResponsesRequest } from './request.js'
import type { Candidate, Route } from './routing.js'

// The guardrails in force on a request (governance-contract.md §8.2), enforced by the engine on
// every door and on interns' model calls: where it may be served, which models and providers it
// may reach, and what of its text may go to them. They stack: every guardrail's rules hold at once
// (allow-lists intersect, ignore-lists add up). Regular expressions run on RE2's engine, in time
// linear in the text, so no pattern can hang the API.

/** A filter match, for the operator's metrics and logs (never the matched text). */
export interface FilterMatch {
  guardrail: string
  /** A built-in detector's slug, or a custom filter's label or number. */
  filter: string
  builtin: boolean
  action: FilterAction
}

interface CompiledFilter {
  guardrail: AppliedGuardrail
  /** How the refusal and the metrics name it: the builtin's slug, or the custom filter's label or number. */
  name: string
  re: RE2JS
  action: FilterAction
  /** What a redaction leaves. */
  label: string
  userOnly: boolean
  builtin: boolean
}

interface Compiled {
  filters: CompiledFilter[]
  routing: boolean
}

/** The built-in detectors' patterns (RE2 syntax). */
const DETECTOR_PATTERNS: Record<BuiltinDetector, string> = {
  email: String.raw`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`,
  phone: String.raw`(\+\d{1,3}[ .-]?)?\(?\d{3}\)?[ .-]?\d{3}[ .-]?\d{4}\b`,
  ssn: String.raw`\b\d{3}-\d{2}-\d{4}\b`,
  'credit-card': String.raw`\b\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{1,7}\b`,
  'ip-address': String.raw`\b((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)\b|\b([0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}\b`,
  secrets: String.raw`\b(sk-[A-Za-z0-9_-]{20,}|sk-ant-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})|-----BEGIN [A-Z ]*PRIVATE KEY-----`,
  'regex-prompt-injection': String.raw`(?i)(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|preceding)\s+(instructions|prompts|rules|directions)|reveal\s+(your|the)\s+(system\s+prompt|instructions)|you\s+are\s+now\s+(DAN|in\s+developer\s+mode)|jailbreak`,
}

/** Whether a custom filter's pattern is one RE2 takes; the reason when not. */
export function patternError(pattern: string): string | undefined {
  try {
    RE2JS.compile(pattern)
    return undefined
  } catch (err) {
    return (err as Error).message
  }
}

const compiledOf = new WeakMap<readonly AppliedGuardrail[], Compiled>()

/** The guardrails made ready to apply: once per caller (the array is cached with the key). */
function compile(guardrails: readonly AppliedGuardrail[]): Compiled {
  let c = compiledOf.get(guardrails)
  if (c) return c
  const filters: CompiledFilter[] = []
  let routing = false
  for (const g of guardrails) {
    const r = g.rules
    routing ||= !!(
      r.allowed_models ||
      r.ignored_models?.length ||
      r.allowed_providers ||
      r.ignored_providers?.length ||
      zdrVendors(g).size
    )
    r.content_filters?.forEach((f, i) =>
      filters.push({
        guardrail: g,
        name: f.label ?? `custom filter ${i + 1}`,
        re: RE2JS.compile(f.pattern),
        action: f.action,
        label: f.label ?? '[REDACTED]',
        userOnly: false,
        builtin: false,
      }),
    )
    for (const b of r.content_filter_builtins ?? [])
      filters.push({
        guardrail: g,
        name: b.slug,
        re: RE2JS.compile(DETECTOR_PATTERNS[b.slug]),
        action: b.action,
        label: BUILTIN_DETECTORS[b.slug],
        userOnly: b.slug === 'regex-prompt-injection' && b.scan_scope === 'user_only',
        builtin: true,
      })
  }
  c = { filters, routing }
  compiledOf.set(guardrails, c)
  return c
}

/** Refuses a request that arrived at a region's host one of its guardrails does not allow (403). */
export function checkRegion(guardrails: readonly AppliedGuardrail[], region: DataRegion) {
  for (const g of guardrails) {
    const allowed = g.rules.allowed_data_regions
    if (allowed && !allowed.includes(region))
      throw gatewayError(
        'permission_denied',
        `the guardrail ${JSON.stringify(g.name)} allows requests only in ${allowed.join(', ')}; this one arrived at a ${region} host`,
      )
  }
}

// ── models and providers ─────────────────────────────────────────────────────────────────────────

const VENDORS = ['anthropic', 'openai', 'google', 'xai'] as const
type Vendor = (typeof VENDORS)[number] | 'other'

/** The model's vendor, as the per-vendor ZDR switches group models. */
function vendorOf(modelId: string): Vendor {
  const author = modelId.slice(0, modelId.indexOf('/')).toLowerCase()
  if (author === 'x-ai') return 'xai'
  return (VENDORS as readonly string[]).includes(author) ? (author as Vendor) : 'other'
}

const zdrOf = new WeakMap<AppliedGuardrail, ReadonlySet<Vendor>>()
/** The vendors whose models a guardrail sends only to zero-data-retention endpoints (the deprecated switch fills in for the others); once per guardrail. */
function zdrVendors(g: AppliedGuardrail): ReadonlySet<Vendor> {
  let on = zdrOf.get(g)
  if (on) return on
  const r = g.rules
  const vendors = new Set<Vendor>()
  for (const v of [...VENDORS, 'other'] as const) if (r[`enforce_zdr_${v}`] ?? r.enforce_zdr) vendors.add(v)
  zdrOf.set(g, (on = vendors))
  return on
}

/** Why a guardrail keeps an endpoint out of the route (undefined: it does not). */
function refusal(g: AppliedGuardrail, c: Candidate): string | undefined {
  const r = g.rules
  const model = c.model.id
  const provider = c.endpoint.provider
  const name = JSON.stringify(g.name)
  if (r.allowed_models && !r.allowed_models.includes(model))
    return `the guardrail ${name} does not allow the model ${model} (it allows ${r.allowed_models.join(', ') || 'none'})`
  if (r.ignored_models?.includes(model)) return `the guardrail ${name} excludes the model ${model}`
  if (r.allowed_providers && !r.allowed_providers.includes(provider))
    return `the guardrail ${name} allows only the providers ${r.allowed_providers.join(', ') || '(none)'}, and ${model} is served by ${provider}`
  if (r.ignored_providers?.includes(provider))
    return `the guardrail ${name} excludes the provider ${provider}, which serves ${model}`
  if (!c.endpoint.zdr && zdrVendors(g).has(vendorOf(model)))
    return `the guardrail ${name} requires zero data retention for ${model}, and its endpoint at ${provider} does not promise it`
  return undefined
}

/**
 * The route without the endpoints a guardrail keeps out (ignored ones are skipped, the rest tried
 * in the same order); refused (403) naming why when none is left.
 */
export function constrainRoute(guardrails: readonly AppliedGuardrail[], route: Route): Route {
  if (!compile(guardrails).routing) return route
  let first: string | undefined
  const kept = route.candidates.filter((c) => {
    for (const g of guardrails) {
      const why = refusal(g, c)
      if (why) {
        first ??= why
        return false
      }
    }
    return true
  })
  if (kept.length === route.candidates.length) return route
  if (!kept.length) throw gatewayError('permission_denied', `${first}; nothing else can serve this request`)
  return { ...route, candidates: kept }
}

// ── content ──────────────────────────────────────────────────────────────────────────────────────

/**
 * The request as it may go to a provider: a `block` filter that matches refuses it (403, naming the
 * filter, never the text); `redact` replaces each match with its label; `flag` only reports. Text
 * is the instructions, the messages' text and the tool results sent back. Copies only what it
 * changes.
 */
export function filterContent(
  guardrails: readonly AppliedGuardrail[],
  req: ResponsesRequest,
  onMatch?: (m: FilterMatch) => void,
): ResponsesRequest {
  const { filters } = compile(guardrails)
  if (!filters.length) return req
  const scan = (text: string, user: boolean): string => {
    let out = text
    for (const f of filters) {
      if (f.userOnly && !user) continue
      if (!f.re.test(out)) continue
      onMatch?.({ guardrail: f.guardrail.id, filter: f.name, builtin: f.builtin, action: f.action })
      if (f.action === 'block')
        throw gatewayError(
          'permission_denied',
          `the guardrail ${JSON.stringify(f.guardrail.name)} blocks this request: its content matches the filter ${JSON.stringify(f.name)}`,
        )
      if (f.action === 'redact') out = f.re.matcher(out).replaceAll(() => f.label)
    }
    return out
  }
  let changed = false
  const text = (s: string, user: boolean) => {
    const t = scan(s, user)
    if (t !== s) changed = true
    return t
  }
  const instructions = typeof req.instructions === 'string' ? text(req.instructions, false) : req.instructions
  const input = typeof req.input === 'string' ? text(req.input, true) : req.input?.map((item) => filterItem(item, text))
  return changed ? { ...req, instructions, input } : req
}

type Text = (s: string, user: boolean) => string

function filterItem(item: InputItem, text: Text): InputItem {
  if (isMessage(item)) {
    const user = item.role === 'user'
    const content = item.content
    if (typeof content === 'string') {
      const t = text(content, user)
      return t === content ? item : { ...item, content: t }
    }
    if (!Array.isArray(content)) return item
    const parts = filterParts(content, (s) => text(s, user))
    return parts === content ? item : { ...item, content: parts }
  }
  if (item.type === 'function_call_output') {
    const output = item.output
    if (typeof output === 'string') {
      const t = text(output, false)
      return t === output ? item : { ...item, output: t }
    }
    if (Array.isArray(output)) {
      const parts = filterParts(output as { type: string }[], (s) => text(s, false))
      return parts === output ? item : { ...item, output: parts }
    }
  }
  return item
}

function filterParts<P extends { type: string }>(parts: P[], text: (s: string) => string): P[] {
  let changed = false
  const out = parts.map((p) => {
    const t = (p as { text?: unknown }).text
    if (typeof t !== 'string') return p
    const filtered = text(t)
    if (filtered === t) return p
    changed = true
    return { ...p, text: filtered }
  })
  return changed ? out : parts
}
