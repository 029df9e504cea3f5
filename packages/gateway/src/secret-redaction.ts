// What private logging keeps is kept without the secrets people paste into prompts and that tools
// bring back: provider and Roster API keys, bearer tokens, cloud and forge tokens, private keys.
// Each is replaced where it stands by `[redacted]`, the text around it kept. The patterns are the
// credentials' published shapes; a secret of no known shape is kept as written (the workspace chose
// to keep its bodies: docs/gateway.md says what is redacted).

const PATTERNS: RegExp[] = [
  // Roster's, OpenRouter's, OpenAI's, Anthropic's and most providers' keys: sk-… (sk-proj-, sk-ant-, sk-or-v1-, sk-roster-v1-).
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  // Bearer tokens in pasted headers.
  /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{16,}/gi,
  // AWS access key ids, GitHub and GitLab tokens, Slack tokens, Google API keys.
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bgh[pousr]_[A-Za-z0-9]{30,}\b/g,
  /\bglpat-[A-Za-z0-9_-]{20,}\b/g,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}\b/g,
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
  // PEM private keys, whole.
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
]

export const REDACTED = '[redacted]'

/** A text with the secrets of known shapes replaced. */
export function redactSecrets(text: string): string {
  let out = text
  for (const p of PATTERNS)
    out = out.replace(p, (_m, bearer?: string) => (typeof bearer === 'string' ? `${bearer}${REDACTED}` : REDACTED))
  return out
}

/** A JSON value with every string in it redacted (keys kept). */
export function redactDeep<T>(value: T): T {
  if (typeof value === 'string') return redactSecrets(value) as T
  if (Array.isArray(value)) return value.map(redactDeep) as T
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v)])) as T
  return value
}
