// A guardrail as the requests it governs carry it (cached with their key): what the gateway
// enforces (governance-contract.md §8.2). Kept apart from the management API's code so the engine
// reads the shape without the routes' dependencies.

/** Where requests are served, as guardrails and keys name it. */
export const DATA_REGIONS = ['global', 'europe', 'us'] as const
export type DataRegion = (typeof DATA_REGIONS)[number]

/** The built-in detectors a guardrail may turn on, with the label a redaction leaves. */
export const BUILTIN_DETECTORS = {
  email: '[EMAIL]',
  phone: '[PHONE]',
  ssn: '[SSN]',
  'credit-card': '[CREDIT_CARD]',
  'ip-address': '[IP_ADDRESS]',
  secrets: '[SECRET]',
  'regex-prompt-injection': '[PROMPT_INJECTION]',
} as const
export type BuiltinDetector = keyof typeof BUILTIN_DETECTORS

export type FilterAction = 'block' | 'redact' | 'flag'

/** A custom filter: a regular expression (RE2 syntax, matched in linear time) and what to do on a match. */
export interface ContentFilter {
  pattern: string
  action: FilterAction
  label?: string | null
}

export interface BuiltinFilter {
  slug: BuiltinDetector
  action: FilterAction
  /** Shown in responses; a redaction leaves it. */
  label?: string
  /** regex-prompt-injection only: the user's messages, or every message (the default). */
  scan_scope?: 'user_only' | 'all_messages'
}

/** A guardrail's lists and switches, as the API names them; null or absent: no restriction. */
export interface GuardrailRules {
  allowed_models?: string[] | null
  ignored_models?: string[] | null
  allowed_providers?: string[] | null
  ignored_providers?: string[] | null
  allowed_data_regions?: DataRegion[] | null
  content_filters?: ContentFilter[] | null
  content_filter_builtins?: BuiltinFilter[] | null
  enable_free_model_publication?: boolean | null
  enable_free_model_training?: boolean | null
  enable_paid_model_training?: boolean | null
  enforce_zdr?: boolean | null
  enforce_zdr_anthropic?: boolean | null
  enforce_zdr_openai?: boolean | null
  enforce_zdr_google?: boolean | null
  enforce_zdr_xai?: boolean | null
  enforce_zdr_other?: boolean | null
}

/** One guardrail in force on a request: the workspace's default, a member's or the key's. */
export interface AppliedGuardrail {
  id: string
  name: string
  rules: GuardrailRules
}
