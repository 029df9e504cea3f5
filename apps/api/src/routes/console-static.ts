import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync } from 'fastify'
import fastifyStatic from '@fastify/static'

// The web console's built files (apps/console, `npm run build`) under /console/: hashed assets
// cached for good, index.html never (a new build is seen at once), each sent precompressed when
// the browser takes it (brotli or gzip, written at build time), with a Content Security Policy that
// lets only the console's own scripts run. Without a build, /console/ says how to make one.

const DIST = fileURLToPath(new URL('../../../console/dist/', import.meta.url))

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

export const consoleStaticRoutes: FastifyPluginAsync = async (app) => {
  // Browsers ask the site's root for its icon whatever a page names: it is the console's.
  app.get('/favicon.ico', { schema: { hide: true } }, (_req, reply) =>
    reply.header('cache-control', 'public, max-age=86400').redirect('/console/favicon.svg', 301),
  )
  // Relative asset URLs need the trailing slash: /console answers with a redirect to /console/.
  app.get('/console', { schema: { hide: true } }, (req, reply) => reply.redirect('console/', 308))
  if (!existsSync(`${DIST}index.html`)) {
    app.get('/console/*', { schema: { hide: true } }, (_req, reply) =>
      reply.code(404).type('text/plain').send('The console is not built: run npm run build.'),
    )
    return
  }
  await app.register(fastifyStatic, {
    root: DIST,
    prefix: '/console/',
    preCompressed: true,
    index: ['index.html'],
    // Files are looked up as they are asked for, so a new build is served without a restart.
    wildcard: true,
    schemaHide: true,
    cacheControl: false,
    setHeaders(res, path) {
      res.header('content-security-policy', CSP)
      res.header('x-content-type-options', 'nosniff')
      res.header('referrer-policy', 'same-origin')
      res.header('cache-control', path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache')
    },
  })
}
