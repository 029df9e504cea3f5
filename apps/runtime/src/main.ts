import { loadConfigOrExit, RuntimeConfig } from '@roster/shared'
import { buildRuntimeHost } from './host.js'
import { sandboxUnavailable } from './sandbox.js'

const config = loadConfigOrExit(RuntimeConfig, 'runtime')
const app = await buildRuntimeHost(config)
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, async () => {
    await app.close()
    process.exit(0)
  })
}
// Interns' shell commands run confined or not at all: say so now, not at an intern's first command.
const noSandbox = sandboxUnavailable()
if (noSandbox) app.log.warn(`interns' shell commands cannot be sandboxed on this machine: ${noSandbox}`)
const address = await app.listen({ host: config.HOST, port: config.PORT })
app.log.info(`runtime host listening on ${address}`)
