import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { InternId, InternSpec, SkillInstall, WORKSPACE_FILE_MAX_BYTES, WorkspaceFilePut } from '@roster/protocol'
import { findSkills, installSkill, removeSkill } from '../agent/skills.js'
import { WorkspacePathError } from '../workspace-files.js'
import { Refused, type Interns } from '../interns.js'
import { refuse } from './refuse.js'

// The host's control API, for the workers (and the reconciler): configure, start, stop, archive and
// remove an intern, and list them. Every call about an intern names its placement (the generation,
// in the x-roster-placement header; in the body for configure), and a call for another is refused.

const generationOf = (req: FastifyRequest) => {
  const v = req.headers['x-roster-placement']
  return typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined
}
const idOf = (req: FastifyRequest) => InternId.safeParse((req.params as { id: string }).id)

const NOT_AN_ID = 'an intern id is a UUID'

/** Answers a refusal in the protocol's body; rethrows anything else. */
export function answerRefusal(reply: FastifyReply, err: unknown) {
  if (err instanceof Refused) return reply.code(err.status).send(err.body)
  throw err
}

export function controlRoutes(app: FastifyInstance, interns: Interns) {
  app.put<{ Params: { id: string } }>('/v1/interns/:id', async (req, reply) => {
    if (!idOf(req).success) return refuse(reply, 'bad_request', NOT_AN_ID)
    const spec = InternSpec.safeParse(req.body)
    if (!spec.success) return refuse(reply, 'bad_request', spec.error.message)
    return interns.configure(req.params.id, spec.data).catch((err) => answerRefusal(reply, err))
  })

  app.post<{ Params: { id: string } }>('/v1/interns/:id/start', async (req, reply) => {
    try {
      return interns.start(interns.check(req.params.id, generationOf(req)))
    } catch (err) {
      return answerRefusal(reply, err)
    }
  })

  // A file from outside the intern's turns (one a person shared in Slack), into its workspace.
  app.put<{ Params: { id: string } }>(
    '/v1/interns/:id/files',
    { bodyLimit: Math.ceil(WORKSPACE_FILE_MAX_BYTES / 3) * 4 + 4096 },
    async (req, reply) => {
      const put = WorkspaceFilePut.safeParse(req.body)
      if (!put.success) return refuse(reply, 'bad_request', put.error.message)
      try {
        const intern = interns.check(req.params.id, generationOf(req))
        return await interns.workspaces.putFile(intern, put.data.path, Buffer.from(put.data.content_base64, 'base64'))
      } catch (err) {
        if (err instanceof WorkspacePathError) return refuse(reply, 'bad_request', err.message)
        return answerRefusal(reply, err)
      }
    },
  )

  // The intern's skills (folders of its workspace): listed, installed a folder at once, removed.
  app.get<{ Params: { id: string } }>('/v1/interns/:id/skills', async (req, reply) => {
    try {
      const intern = interns.check(req.params.id, generationOf(req))
      return await findSkills(interns.workspaces.workspace(intern.id))
    } catch (err) {
      return answerRefusal(reply, err)
    }
  })
  app.put<{ Params: { id: string; name: string } }>(
    '/v1/interns/:id/skills/:name',
    { bodyLimit: 12 * 1024 * 1024 },
    async (req, reply) => {
      const put = SkillInstall.safeParse(req.body)
      if (!put.success) return refuse(reply, 'bad_request', put.error.message)
      try {
        const intern = interns.check(req.params.id, generationOf(req))
        const files = put.data.files.map((f) => ({ path: f.path, bytes: Buffer.from(f.content_base64, 'base64') }))
        if (files.reduce((n, f) => n + f.bytes.length, 0) > 8 * 1024 * 1024)
          return refuse(reply, 'bad_request', 'a skill holds at most 8 MiB of files')
        return await installSkill(interns.workspaces.workspace(intern.id), req.params.name, files)
      } catch (err) {
        if (err instanceof WorkspacePathError) return refuse(reply, 'bad_request', err.message)
        return answerRefusal(reply, err)
      }
    },
  )
  app.delete<{ Params: { id: string; name: string } }>('/v1/interns/:id/skills/:name', async (req, reply) => {
    try {
      const intern = interns.check(req.params.id, generationOf(req))
      const removed = await removeSkill(interns.workspaces.workspace(intern.id), req.params.name)
      return removed ? { removed: true } : refuse(reply, 'not_found', `no skill ${req.params.name}`)
    } catch (err) {
      return answerRefusal(reply, err)
    }
  })

  app.post<{ Params: { id: string } }>('/v1/interns/:id/stop', async (req, reply) => {
    const intern = interns.get(req.params.id)
    if (!intern) return { stopped: true }
    try {
      interns.check(req.params.id, generationOf(req))
    } catch (err) {
      return answerRefusal(reply, err)
    }
    // Suspending stops the intern's daemon: its runs are cancelled (a client listening is told), its sessions kept.
    await interns.stop(intern, 'the intern was suspended; its run was cancelled')
    return { stopped: true }
  })

  // An intern this host never had has nothing to archive.
  app.post<{ Params: { id: string } }>('/v1/interns/:id/archive', async (req, reply) => {
    if (!idOf(req).success) return refuse(reply, 'bad_request', NOT_AN_ID)
    const intern = interns.get(req.params.id)
    if (!intern) return { archived: false }
    return interns.archive(intern)
  })

  app.delete<{ Params: { id: string } }>('/v1/interns/:id', async (req) => {
    const intern = interns.get(req.params.id)
    if (intern) await interns.drop(intern, 'the intern was deleted')
    return { removed: true }
  })

  const view = ({ spec, daemon, snapshotting: _snapshotting, ...rest }: NonNullable<ReturnType<Interns['get']>>) => ({
    id: rest.id,
    hostname: spec.hostname,
    generation: spec.generation,
    running: rest.running,
    starts: rest.starts,
    configWrites: rest.configWrites,
    startedAt: rest.startedAt,
    /** Runs paused on a question (operators and tests watch a question's deadline pass). */
    paused: daemon?.paused ?? 0,
  })

  app.get<{ Params: { id: string } }>('/v1/interns/:id', async (req, reply) => {
    const intern = interns.get(req.params.id)
    if (!intern) return reply.code(404).send({ error: 'not_found', message: 'not hosted here' })
    return { ...view(intern), model: intern.spec.model }
  })

  app.get('/v1/interns', async () => ({ data: interns.list().map(view) }))
}
