import type { FastifyPluginAsync } from 'fastify'
import type { AppDeps } from '../deps.js'
import { pingDatabase } from '@roster/shared'

/** /health: the process is up. /ready: Postgres and Redis answer, so requests can be served. */
export const healthRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.get('/health', { schema: { hide: true } }, async () => ({ status: 'ok' }))
    // The API's base URLs, as clients configure them (ANTHROPIC_BASE_URL=…/api, a base_url of
    // …/api/v1): agents warm their connection with a HEAD there (Fastify answers HEAD for a GET route).
    for (const url of ['/api', '/api/v1'])
      app.get(url, { schema: { hide: true } }, async () => ({
        status: 'ok',
        api: '/api/v1',
        openapi: '/api/v1/openapi.json',
      }))
    // The server's own address: a person's browser is sent to the console, anything else told where things are.
    app.get('/', { schema: { hide: true } }, async (req, reply) => {
      if ((req.headers.accept ?? '').includes('text/html')) return reply.redirect('/console/', 302)
      return {
        status: 'ok',
        api: '/api/v1',
        openapi: '/api/v1/openapi.json',
        console: '/console/',
      }
    })
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
