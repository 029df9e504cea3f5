import { retryableAnswer, type ApprovalMode, type EgressRequest, type RunEvent } from '@roster/protocol'
import type { CommandLimits, CommandResult } from '../command-types.js'
import type { SessionStore } from './session-store.js'
import type { Answer, Question } from './interactions.js'

// What an intern's turn is set up with and speaks, shared by the turn (agent-turn.ts), its model
// calls (model-call.ts) and its tools (agent-tools.ts): each of them imports these, none the others'.

export type Json = Record<string, unknown>

export type HttpRequestArgs = Omit<EgressRequest, 'method'> & { method?: string }

/** What the turn reads of /responses' reply (the rest of it is passed over). */
export interface ModelReply {
  model?: string
  output?: {
    type: string
    content?: { type: string; text?: string }[]
    call_id?: string
    name?: string
    arguments?: string
  }[]
  usage?: { input_tokens?: number; output_tokens?: number; total_tokens?: number; cost?: number }
  error?: { message?: string; metadata?: { reason?: unknown; retryable?: unknown; error_type?: unknown } }
}

export class TurnFailed extends Error {
  override name = 'TurnFailed'
  /** Whether trying again may help: the API's word for it (retryableAnswer), else its status's. */
  readonly retryable: boolean
  /** How long the answer asked the caller to wait before trying again (Retry-After), in ms. */
  readonly retryAfterMs?: number
  constructor(
    message: string,
    /** The HTTP status the model call answered. */
    readonly status: number,
    answer: { error?: ModelReply['error']; retryAfterMs?: number } = {},
  ) {
    super(message)
    this.retryable = retryableAnswer(status, answer.error?.metadata)
    this.retryAfterMs = answer.retryAfterMs
  }
}

export interface AgentSetup {
  /** Roster's API base (…/api/v1). */
  apiBase: string
  /** The intern's own API key (kind intern). */
  apiKey: string
  model: string
  instructions: string | null
  /** The intern's workspace directory (mounted at /workspace in its sandbox). */
  workspace: string
  /** Runs a shell command in the intern's workspace, in its sandbox; `network`: through its egress. */
  runCommand: (
    command: string,
    opts: CommandLimits & { network: boolean },
    signal?: AbortSignal,
  ) => Promise<CommandResult>
  sessions: SessionStore
  /** Model turns at most per run (tool calls in between); then one last turn without tools. */
  maxSteps: number
  commandTimeoutMs: number
  /** Told of a model call made again after a passing refusal (for the host's log). */
  onRetry?: (err: TurnFailed, waitMs: number, attempt: number) => void
  /** Prompts sent into this running turn (steering): taken between model calls, answered in this turn. */
  steered?: () => string[]
  /** The intern's HTTP requests, through the egress that releases its secrets by host (absent: no http_request tool). */
  http?: (args: HttpRequestArgs, signal?: AbortSignal) => Promise<unknown>
  /**
   * `manual`: every shell command, network for one, and every HTTP request first asks the user's
   * permission. `self-drive`: nothing asks, and shell commands get the network (when the host can give it).
   */
  approval: ApprovalMode
  /** Whether this host can give a shell command the network (through the egress). */
  commandNetwork: boolean
  /** Puts a question to the user and waits for the answer (the run pauses meanwhile; rejects when the run ends). */
  ask: (question: Question) => Promise<Answer>
  /** Its MCP servers' tools, when it has any. */
  extraTools?: ExtraTools
  /** Starts a subagent (absent in a subagent's own turn: no subagents of subagents). */
  startSubagent?: (args: { prompt: string; model?: string; budget_usd?: number }) => Promise<Json>
  /** A subagent's budget: its turn stops once its model calls have cost this much. */
  budgetUsd?: number
  /** Offer the gateway's web search (`openrouter:web_search`: Roster runs the searches, billed to the intern). */
  webSearch?: boolean
}

/**
 * Tools beyond the intern's own, found as its turn starts (its MCP servers'): their definitions as
 * /responses takes function tools, and how one is run (undefined: not one of these). `permit` asks
 * the user first as the shell does (manual mode), and says what the model is told if they refuse.
 */
export interface ExtraTools {
  definitions: Json[]
  run(
    name: string,
    args: Json,
    permit: (kind: string, operation: string) => Promise<string | undefined>,
    signal?: AbortSignal,
  ): Promise<string> | undefined
}

/** What a turn tells as it goes: the protocol's run events of text, reasoning and tools. */
export type AgentEvent = Extract<RunEvent, { type: 'text' | 'reasoning' | 'tool' }>
