import { randomUUID } from 'node:crypto'
import type { ApprovalMode, RunEvent, TurnUsage } from '@roster/protocol'
import type { AgentEvent } from './agent-turn.js'
import { questionArguments, readAnswer, type Answer, type Question } from './interactions.js'
import type { SessionStore } from './session-store.js'

// An intern's daemon: its runs, one session each. A run's turn holds the intern (one turn at a
// time, per intern, not per session), but a subagent's (a detached turn the intern's own turn
// started; up to `maxSubagents` at once), which runs alongside whatever else the intern does. A run
// that asks its user something pauses, lets go of the intern, and waits for the answer up to a
// deadline, then goes on, on the stream of the request that brought the answer. A paused run
// outlives the request that started it; a run whose stream is cut while it goes is cancelled with
// any command it runs, unless it is a detached turn (one no person waits on: a schedule's, a
// webhook's, a subagent's, named by its turn id), which runs on without a listener; its id again
// attaches to it (or to how it ended, kept a while) instead of starting it twice. Nothing here
// touches HTTP: the host gives each run a stream and turns outcomes into statuses.

/** Where a run's events go: the response of the request attached to it. */
export interface RunStream {
  send(event: RunEvent): void
  end(): void
}

/** One run's work, as the host does it: the agent loop with the intern's setup. */
export type ExecuteRun = (run: {
  sessionId: string
  prompt: string
  approval: ApprovalMode
  emit: (event: AgentEvent) => void
  ask: (question: Question) => Promise<Answer>
  steered: () => string[]
  signal: AbortSignal
  /** A subagent's turn: its model and budget (it starts no subagents of its own). */
  subagent?: Subagent
}) => Promise<TurnUsage>

/** What a subagent's turn runs with (ChatRequest's `subagent`). */
export interface Subagent {
  model?: string
  budget_usd?: number
}

export interface DaemonOptions {
  sessions: SessionStore
  execute: ExecuteRun
  /** How long a question waits for its answer; then the run is cancelled. */
  deadlineMs: number
  /** Runs one intern may hold paused at once; past it a new prompt is refused (503 busy). */
  maxPaused: number
  /** Subagents' turns one intern may run alongside its own at once; past it one waits (409 busy). */
  maxSubagents?: number
  onError: (err: unknown, sessionId: string) => void
  /** The model the intern calls now: named when a run's stream opens, before any model has answered. */
  model?: () => string
  /** Once its runs have ended as it stops: what the intern held on this host let go of (its MCP connections). */
  onStop?: () => Promise<void>
}

export type PromptOutcome =
  { started: true } | { steered: true } | { attached: true } | { busy: string; status: 409 | 503 }
export type AttachOutcome = { attached: true } | { unknown: string } | { taken: string }

/** How long a detached turn's end is kept for a caller that attaches after it (its worker died meanwhile). */
const ENDED_TURNS_KEPT_MS = 30 * 60_000
/** Ended detached turns kept at most (the oldest go first). */
const ENDED_TURNS_KEPT = 1_000
/** What a detached turn said, kept for a caller attaching later, at most (the worker keeps 64 KiB of a reply). */
const TEXT_KEPT = 64 * 1024

/** How a detached turn ended: its text, and its last event (done, error, ended). */
interface EndedTurn {
  sessionId: string
  text: string
  model: string
  last: RunEvent
  at: number
}
export type ReplyOutcome =
  | { resumed: true }
  | { unknown: string }
  | { notPending: string }
  | { badAnswer: string }
  | { busy: string; status: 409 }

/** Why the daemon itself ended a run: said on its stream, when someone listens (the contract's run_ended). */
export class RunEnded extends Error {
  override name = 'RunEnded'
}

interface Pending {
  id: string
  question: Question
  answer(answer: Answer): void
}

class Run {
  readonly controller = new AbortController()
  stream?: RunStream
  pending?: Pending
  /** A detached turn's id: it runs on when its stream goes. */
  turnId?: string
  /** A subagent's turn: it runs alongside the intern's turn, never holding the intern. */
  subagent?: Subagent
  /** What it said so far, and as which model (what a caller attaching midway is told first). */
  text = ''
  model = ''
  /** Prompts steered into this run's going turn. */
  readonly steer: string[] = []
  /** Every interaction this run asked, answered or not. */
  readonly asked = new Set<string>()
  constructor(
    readonly sessionId: string,
    readonly approval: ApprovalMode,
  ) {}
}

export class InternDaemon {
  /** The run whose turn is going: one per intern. */
  private turn?: Run
  /** Live runs (going or paused) by session. */
  private readonly runs = new Map<string, Run>()
  /** Each live run's work, settled once it has ended and said so on its stream. */
  private readonly working = new Set<Promise<void>>()
  /** Live detached turns by turn id. */
  private readonly turns = new Map<string, Run>()
  /** Detached turns that ended lately, by turn id (insertion order: the oldest first). */
  private readonly endedTurns = new Map<string, EndedTurn>()

  constructor(private readonly options: DaemonOptions) {}

  /** Runs paused on a question, waiting for its answer. */
  get paused(): number {
    let n = 0
    for (const run of this.runs.values()) if (run.pending) n++
    return n
  }

  /** A run's stream opens: its session, and the model the intern calls (what the client's first chunk names). */
  private opened(stream: RunStream, sessionId: string) {
    const model = this.options.model?.()
    stream.send({ type: 'session', session_id: sessionId, ...(model ? { model } : {}) })
  }

  /**
   * A user prompt: steered into the session's going turn, or a new run, or refused. With `turnId`,
   * a detached turn: attached to when it has already started here.
   */
  prompt(
    sessionId: string,
    text: string,
    approval: ApprovalMode,
    stream: RunStream,
    turnId?: string,
    subagent?: Subagent,
  ): PromptOutcome {
    if (turnId && (this.turns.has(turnId) || this.endedTurns.has(turnId))) {
      const attached = this.attach(turnId, stream)
      return 'attached' in attached
        ? attached
        : { busy: 'taken' in attached ? attached.taken : attached.unknown, status: 409 }
    }
    if (turnId && subagent) return this.startSubagent(sessionId, text, approval, stream, turnId, subagent)
    if (this.turn) {
      // A detached turn is a turn of its own, never steered into a person's (nor they into it).
      if (this.turn.sessionId === sessionId && !turnId && !this.turn.turnId) {
        this.turn.steer.push(text)
        return { steered: true }
      }
      return { busy: 'the intern is running another turn; one runs at a time', status: 409 }
    }
    const waiting = this.runs.get(sessionId)
    if (waiting?.pending)
      return {
        busy: `session ${sessionId} waits for the answer to ${waiting.pending.id}: reply to it (or with cancel) first`,
        status: 409,
      }
    const paused = this.paused
    if (paused >= this.options.maxPaused)
      return {
        busy: `the intern holds ${paused} runs paused on questions, as many as it can; answer one, or retry later`,
        status: 503,
      }
    const run = new Run(sessionId, approval)
    if (turnId) run.turnId = turnId
    this.turn = run
    this.begin(run, text, stream)
    return { started: true }
  }

  /** A subagent's turn: alongside the intern's, up to maxSubagents at once, in a session of its own. */
  private startSubagent(
    sessionId: string,
    text: string,
    approval: ApprovalMode,
    stream: RunStream,
    turnId: string,
    subagent: Subagent,
  ): PromptOutcome {
    const max = this.options.maxSubagents ?? 2
    const going = [...this.runs.values()].filter((r) => r.subagent).length
    if (going >= max)
      return { busy: `the intern runs ${going} subagents already, as many as it may at once (${max})`, status: 409 }
    if (this.runs.has(sessionId)) return { busy: `session ${sessionId} has a run already`, status: 409 }
    const run = new Run(sessionId, approval)
    run.turnId = turnId
    run.subagent = subagent
    this.begin(run, text, stream)
    return { started: true }
  }

  private begin(run: Run, text: string, stream: RunStream) {
    run.stream = stream
    if (run.turnId) this.turns.set(run.turnId, run)
    this.runs.set(run.sessionId, run)
    this.opened(stream, run.sessionId)
    const work = this.execute(run, text).finally(() => this.working.delete(work))
    this.working.add(work)
  }

  /** A tool message: the answer to the question `interactionId` of the session's paused run. */
  async reply(sessionId: string, interactionId: string, content: string, stream: RunStream): Promise<ReplyOutcome> {
    const run = this.runs.get(sessionId)
    // Any reply while a turn goes waits for it (the contract's §1.6): one turn per intern; a
    // subagent's goes on alongside.
    if (this.turn && !run?.subagent) return { busy: 'the intern is running a turn; reply when it ends', status: 409 }
    const pending = run?.pending
    if (run && pending?.id === interactionId) {
      const read = readAnswer(pending.question, content)
      // A wrong answer changes nothing: the run stays paused, its deadline as it was.
      if ('problem' in read) return { badAnswer: read.problem }
      run.pending = undefined
      run.stream = stream
      if (!run.subagent) this.turn = run
      this.opened(stream, sessionId)
      pending.answer(read.answer)
      return { resumed: true }
    }
    if (run?.asked.has(interactionId)) return { notPending: `${interactionId} was already answered` }
    // Asked by a run that has ended (cancelled, past its deadline, or on a host since restarted)?
    const record = (await this.options.sessions.records(sessionId)).find(
      (r) => r.type === 'roster.interaction' && r.id === interactionId,
    )
    if (record) return { notPending: `the run that asked ${interactionId} has ended` }
    return { unknown: `no interaction ${interactionId} was asked in session ${sessionId}` }
  }

  /**
   * A caller takes up the detached turn `turnId`'s stream: what it said so far, then the rest as it
   * comes (or the question it waits on, or how it ended). Refused while another caller follows it.
   */
  attach(turnId: string, stream: RunStream): AttachOutcome {
    const run = this.turns.get(turnId)
    if (run) {
      if (run.stream) return { taken: `turn ${turnId} is followed by another caller` }
      this.opened(stream, run.sessionId)
      if (run.text) stream.send({ type: 'text', delta: run.text, model: run.model })
      if (run.pending) {
        stream.send({
          type: 'pause',
          interaction_id: run.pending.id,
          arguments: questionArguments(run.pending.question),
        })
        stream.end()
      } else run.stream = stream
      return { attached: true }
    }
    const ended = this.endedTurns.get(turnId)
    if (!ended) return { unknown: `no turn ${turnId} runs on this host, nor ended here lately` }
    this.opened(stream, ended.sessionId)
    if (ended.text) stream.send({ type: 'text', delta: ended.text, model: ended.model })
    stream.send(ended.last)
    stream.end()
    return { attached: true }
  }

  /**
   * The stream of a run ended before the run did (its client went away): the run is cancelled, but
   * a detached turn, which runs on for whoever attaches next.
   */
  detach(stream: RunStream) {
    for (const run of this.runs.values()) {
      if (run.stream !== stream) continue
      run.stream = undefined
      if (!run.turnId) run.controller.abort(new Error('the client went away'))
    }
  }

  /**
   * Cancels every run (suspend, removal, the host shutting down); a client still listening hears
   * that the run ended. Settles once every run has ended, its commands killed and its stream closed.
   */
  async stop(why: string): Promise<void> {
    for (const run of this.runs.values()) run.controller.abort(new RunEnded(why))
    await Promise.allSettled([...this.working])
    await this.options.onStop?.().catch((err: unknown) => this.options.onError(err, ''))
  }

  get idle() {
    return this.runs.size === 0
  }

  /** Whether a turn is going now (a paused run is not one). */
  get turning() {
    return this.turn !== undefined
  }

  /** Settles when the turns going now (subagents' too) have ended (paused runs do not hold it). */
  async turnsEnded(): Promise<void> {
    const going = () => this.turn !== undefined || [...this.runs.values()].some((r) => r.subagent && !r.pending)
    while (going()) await Promise.race([...this.working])
  }

  private async execute(run: Run, prompt: string) {
    const { signal } = run.controller
    let last: RunEvent | undefined
    const end = (event: RunEvent) => {
      last = event
      run.stream?.send(event)
    }
    try {
      const usage = await this.options.execute({
        sessionId: run.sessionId,
        prompt,
        approval: run.approval,
        emit: (event) => {
          if (event.type === 'text') {
            // Kept for a caller attaching later, up to what it keeps of a reply.
            if (run.text.length < TEXT_KEPT) run.text += event.delta.slice(0, TEXT_KEPT - run.text.length)
            run.model = event.model
          }
          run.stream?.send(event)
        },
        ask: (question) => this.ask(run, question),
        steered: () => run.steer.splice(0),
        signal,
        subagent: run.subagent,
      })
      end({ type: 'done', usage })
    } catch (err) {
      if (signal.reason instanceof RunEnded) end({ type: 'ended', message: signal.reason.message })
      else if (!signal.aborted) {
        this.options.onError(err, run.sessionId)
        const failed = err as { message?: string; retryable?: boolean }
        end({ type: 'error', message: failed.message ?? 'the turn failed', retryable: failed.retryable ?? true })
      } else end({ type: 'ended', message: 'the turn was cancelled' })
    } finally {
      if (this.turn === run) this.turn = undefined
      if (this.runs.get(run.sessionId) === run) this.runs.delete(run.sessionId)
      if (run.turnId) this.keepEnded(run, last)
      run.stream?.end()
      run.stream = undefined
    }
  }

  /** A detached turn's end, kept for a caller that attaches after it. */
  private keepEnded(run: Run, last: RunEvent | undefined) {
    this.turns.delete(run.turnId!)
    const now = Date.now()
    this.endedTurns.set(run.turnId!, {
      sessionId: run.sessionId,
      text: run.text,
      model: run.model,
      last: last ?? { type: 'ended', message: 'the turn ended' },
      at: now,
    })
    for (const [id, ended] of this.endedTurns) {
      if (this.endedTurns.size <= ENDED_TURNS_KEPT && now - ended.at < ENDED_TURNS_KEPT_MS) break
      this.endedTurns.delete(id)
    }
  }

  /** Pauses `run` on a question: its stream ends with it, the intern is free, the answer resumes it. */
  private async ask(run: Run, question: Question): Promise<Answer> {
    const { signal } = run.controller
    signal.throwIfAborted()
    const id = `ia_${randomUUID()}`
    // Kept with the session, so a reply after the run ended (or the host restarted) is told so, not "unknown".
    await this.options.sessions.record(run.sessionId, { type: 'roster.interaction', id, question })
    signal.throwIfAborted()
    return new Promise<Answer>((resolve, reject) => {
      const deadline = setTimeout(
        () =>
          run.controller.abort(
            new RunEnded(`no answer to ${id} came within ${Math.round(this.options.deadlineMs / 1000)} s`),
          ),
        this.options.deadlineMs,
      )
      // How the question closed, kept beside it: what is still waiting for an answer can be listed
      // from the record (the console's inbox), without asking every host.
      const closed = (outcome: 'answered' | 'ended') =>
        void this.options.sessions
          .record(run.sessionId, { type: 'roster.interaction_closed', id, outcome })
          .catch((err: unknown) => this.options.onError(err, run.sessionId))
      const ended = () => {
        clearTimeout(deadline)
        run.pending = undefined
        closed('ended')
        reject(signal.reason)
      }
      signal.addEventListener('abort', ended, { once: true })
      run.asked.add(id)
      run.pending = {
        id,
        question,
        answer(answer) {
          clearTimeout(deadline)
          signal.removeEventListener('abort', ended)
          closed('answered')
          resolve(answer)
        },
      }
      if (this.turn === run) this.turn = undefined
      run.stream?.send({ type: 'pause', interaction_id: id, arguments: questionArguments(question) })
      run.stream?.end()
      run.stream = undefined
    })
  }
}
