import { loadConfigOrExit, RuntimeConfig } from '@roster/shared'
import { buildRuntimeHost } from './host.js'

const config = loadConfigOrExit(RuntimeConfig, 'runtime')
const app = await buildRuntimeHost(config)
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, async () => {
    await app.close()
    process.exit(0)
  })
}
const address = await app.listen({ host: config.HOST, port: config.PORT })
app.log.info(`runtime host listening on ${address}`)
