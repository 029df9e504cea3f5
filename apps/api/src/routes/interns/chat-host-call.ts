import type { FastifyRequest } from 'fastify'
import { AppError, type ChatRequest, type HostErrorBody } from '@roster/shared'
import { type MoveWait, neverReachedHost, REFUSED_WHILE_MOVING, type ChatOutcome } from '@roster/shared/fleet'
import { Lru } from '../../plugins/lru.js'
import type { AppDeps } from '../../deps.js'

// A chat turn's call to the intern's runtime host, under the fleet's policy for an intern being
// moved (fleet/moves.ts): an intern the fleet is moving (its host died or drains) is waited for, up
// to CHAT_MOVE_WAIT_MS, and the prompt goes to its new host: a move is not a failed turn. Only a
// call its host refused, or one that never reached it, is sent again (never one a host took).

export type Placements = PlacementCache<Awaited<ReturnType<AppDeps['runtime']['placement']>>>

export const placementCache = (deps: AppDeps): Placements =>
  new PlacementCache((id) => deps.runtime.placement(id), 1_000)

/** The host's answer to the turn (streamed, steered, or a refusal not to be waited out), or the chat's error. */
export async function callHost(
  deps: AppDeps,
  placements: Placements,
  req: FastifyRequest,
  internId: string,
  forward: ChatRequest,
  upstream: AbortController,
  moves: MoveWait,
): Promise<ChatOutcome> {
  const left = () => upstream.abort()
  req.raw.once('close', left)
  try {
    for (let attempt = 0; ;) {
      // Where it is placed and whether it runs: from the last second's answer on a first try (a
      // host refuses a placement it no longer holds, and the next try reads the record afresh).
      const placed = attempt++ === 0 ? await placements.get(internId) : await placements.fresh(internId)
      if (!placed || placed.status !== 'running') {
        if (!(await moves.moving())) throw new AppError('intern_not_ready', `intern ${internId} is not running`)
        await moves.next(
          () =>
            new AppError(
              'intern_not_ready',
              `intern ${internId} is moving to another runtime host and did not run there within ${deps.config.CHAT_MOVE_WAIT_MS} ms; retry shortly`,
              { retryAfter: 5 },
            ),
        )
        continue
      }
      let outcome: ChatOutcome
      try {
        outcome = await deps.runtime.chat(
          placed,
          internId,
          forward,
          upstream.signal,
          deps.config.RUNTIME_ANSWER_TIMEOUT_MS,
        )
      } catch (err) {
        if ((err as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT')
          throw new AppError(
            'timeout',
            `the intern did not answer within ${deps.config.RUNTIME_ANSWER_TIMEOUT_MS} ms`,
            {
              cause: err,
              status: 504,
            },
          )
        const unreachable = () => new AppError('intern_unreachable', 'the intern could not be reached', { cause: err })
        // A host that cannot be connected to may have died: the fleet moves its interns once it is declared dead.
        if (!neverReachedHost(err)) throw unreachable()
        await moves.next(unreachable)
        continue
      }
      if (outcome.kind !== 'refused') return outcome
      // A host that joined again since the placement was read wants its new epoch's credential: read it afresh, once.
      if (outcome.error.error === 'unauthorized' && attempt === 1) continue
      if (
        REFUSED_WHILE_MOVING.has(outcome.error.error) ||
        (outcome.error.error === 'intern_not_ready' && (await moves.moving()))
      ) {
        const refusal = outcome
        await moves.next(() => hostRefusal(internId, refusal.status, refusal.error))
        continue
      }
      return outcome
    }
  } finally {
    req.raw.off('close', left)
  }
}

/** Placements read in the last `ttlMs`, shared by concurrent readers; `fresh` reads the record and keeps that. */
class PlacementCache<T> {
  private readonly entries = new Lru<string, { value: Promise<T>; at: number }>(10_000)
  constructor(
    private readonly read: (id: string) => Promise<T>,
    private readonly ttlMs: number,
  ) {}

  get(id: string): Promise<T> {
    const hit = this.entries.get(id)
    return hit && Date.now() - hit.at < this.ttlMs ? hit.value : this.fresh(id)
  }

  fresh(id: string): Promise<T> {
    const value = this.read(id)
    this.entries.set(id, { value, at: Date.now() })
    value.catch(() => this.entries.delete(id))
    return value
  }
}

/** A host's refusal of a chat call, by its code, as the chat route's error. */
export function hostRefusal(internId: string, status: number, { error, message }: HostErrorBody): AppError {
  switch (error) {
    case 'busy':
    case 'busy_paused':
      // A running turn ends soon; a full set of paused runs waits for answers.
      return new AppError('busy', message, {
        status: error === 'busy_paused' ? 503 : 409,
        retryAfter: error === 'busy_paused' ? 5 : 1,
      })
    case 'bad_answer':
      return new AppError('invalid_body', `answer not accepted (the run stays paused): ${message}`)
    case 'bad_request':
      return new AppError('invalid_body', `invalid request: ${message}`)
    case 'interaction_unknown':
    case 'interaction_not_pending':
      return new AppError(error, message)
    case 'intern_not_ready':
    case 'placement_stale':
    case 'not_found':
      // The record places it there, but the host does not hold it (yet, or any more).
      return new AppError('intern_not_ready', `intern ${internId} is not running on its host`)
    // The host joined again under a new credential twice while this chat looked it up: ours, not the caller's, to fix.
    case 'unauthorized':
    case 'placement_unverified':
    case 'draining':
      return new AppError('intern_unreachable', `the intern's host cannot take it now (${message}); retry shortly`, {
        status: 502,
      })
    default:
      // Any other refusal: the host's own 4xx is a rejection (retrying will not help); a 5xx, unreachable.
      if (status < 500)
        return new AppError('intern_rejected', `the intern's host refused the request (${status}): ${message}`)
      return new AppError('intern_unreachable', `the intern's host answered ${status}`)
  }
}
