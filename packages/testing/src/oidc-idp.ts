import { join } from 'node:path'
import { freePort, NodeProcess, repoRoot } from './node-process.js'

// The tests' OpenID Connect issuer (oidc-idp.mjs: `oidc-provider` as its own process), for the
// console's single sign-on.

export interface OidcIdp {
  issuer: string
  clientId: string
  clientSecret: string
  process: NodeProcess
  stop(): Promise<void>
}

export async function startOidcIdp(opts: { redirectUris: string[]; unverified?: string[] }): Promise<OidcIdp> {
  const port = await freePort()
  const clientId = 'roster-console'
  const clientSecret = 'roster-console-secret-for-tests-only'
  const proc = new NodeProcess('oidc issuer', join(repoRoot, 'packages', 'testing', 'oidc-idp.mjs'), {
    IDP_PORT: String(port),
    IDP_CLIENT: JSON.stringify({ client_id: clientId, client_secret: clientSecret, redirect_uris: opts.redirectUris }),
    IDP_UNVERIFIED: (opts.unverified ?? []).join(','),
    NODE_OPTIONS: undefined,
  }).start()
  await proc.waitForOutput(/oidc issuer listening/)
  return {
    issuer: `http://127.0.0.1:${port}`,
    clientId,
    clientSecret,
    process: proc,
    stop: async () => {
      await proc.kill()
    },
  }
}
