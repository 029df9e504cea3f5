import type { FastifyPluginAsync } from 'fastify'
import type { AppDeps } from '../deps.js'
import { pingDatabase } from '@roster/shared'

/** /health: the process is up. /ready: Postgres and Redis answer, so requests can be served. */
export const healthRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.get('/health', { schema: { hide: true } }, async () => ({ status: 'ok' }))
    app.get('/ready', { schema: { hide: true } }, async (_req, reply) => {
      const [postgres, redis] = await Promise.all([
        pingDatabase(deps.db).then(
          () => 'ok',
          () => 'unavailable',
        ),
        deps.redis.ping().then(
          () => 'ok',
          () => 'unavailable',
        ),
      ])
      const ready = postgres === 'ok' && redis === 'ok'
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', postgres, redis })
    })
  }
