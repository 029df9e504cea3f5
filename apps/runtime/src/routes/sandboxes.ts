import type { FastifyInstance } from 'fastify'
import { z } from 'zod'
import { SandboxCommand, type SandboxCommandResult } from '@roster/protocol'
import { SandboxBusy, SandboxPolicyConflict, type GatewaySandboxes } from '../gateway-sandboxes.js'
import { SandboxUnavailableError } from '../sandbox.js'
import { refuse } from './refuse.js'

// The gateway's sandboxes on this host (gateway-sandboxes.ts), behind the fleet credential as the
// rest of the control API: a command run in a sandbox named by its key, and a sandbox discarded.

const Key = z.string().regex(/^[A-Za-z0-9_.:-]{1,200}$/, 'a sandbox key: letters, digits, _ . : -, at most 200')

export function sandboxRoutes(app: FastifyInstance, sandboxes: GatewaySandboxes) {
  app.post<{ Params: { key: string } }>('/v1/sandboxes/:key/commands', async (req, reply) => {
    const key = Key.safeParse(req.params.key)
    if (!key.success) return refuse(reply, 'bad_request', key.error.issues[0]!.message)
    const body = SandboxCommand.safeParse(req.body)
    if (!body.success) return refuse(reply, 'bad_request', body.error.issues.map((i) => i.message).join('; '))
    // The caller gone before the answer (the response closed unfinished): the command is stopped.
    const aborted = new AbortController()
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) aborted.abort()
    })
    try {
      const r = await sandboxes.run(
        key.data,
        body.data.command,
        body.data.timeout_ms,
        aborted.signal,
        body.data.network?.allowed_domains,
      )
      const answer: SandboxCommandResult = {
        exit_code: r.exitCode,
        signal: r.signal,
        stdout: r.stdout,
        stderr: r.stderr,
        truncated: r.truncated,
        timed_out: r.timedOut,
        duration_ms: Math.round(r.durationMs),
        ...(r.limit ? { limit: r.limit } : {}),
      }
      return answer
    } catch (err) {
      if (err instanceof SandboxBusy) return refuse(reply, 'busy', err.message)
      if (err instanceof SandboxPolicyConflict) return refuse(reply, 'sandbox_policy_conflict', err.message)
      if (err instanceof SandboxUnavailableError) return refuse(reply, 'sandbox_unavailable', err.message)
      throw err
    }
  })

  app.delete<{ Params: { key: string } }>('/v1/sandboxes/:key', async (req, reply) => {
    const key = Key.safeParse(req.params.key)
    if (!key.success) return refuse(reply, 'bad_request', key.error.issues[0]!.message)
    await sandboxes.discard(key.data)
    return { discarded: true }
  })
}
