import type { RuntimeConfig } from '@roster/protocol'
import type { FastifyBaseLogger } from 'fastify'
import type { FleetClient } from './fleet-client.js'
import type { EgressProxies } from './egress-proxy.js'
import type { CommandRunner } from './sandbox.js'

// What the host's interns are run with: the interns (interns.ts), their daemons (intern-daemon.ts)
// and their workspaces (intern-workspaces.ts) each take it from here, not from one another.

export interface InternsDeps {
  config: RuntimeConfig
  log: FastifyBaseLogger
  fleet: FleetClient
  commands: { run: CommandRunner; mode: 'sandboxed' | 'unconfined' | 'refused' }
  proxies: EgressProxies
  user?: { uid: number; gid: number; setpriv: string }
}
