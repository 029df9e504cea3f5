// A real OpenID Connect issuer for the tests (the `oidc-provider` package, run as its own process):
// its development login form takes any login, which becomes the person's e-mail (and subject);
// e-mails listed in IDP_UNVERIFIED are not vouched for (email_verified false). Its client is the one
// IDP_CLIENT describes. Prints "oidc issuer listening on PORT" when ready.
import Provider from 'oidc-provider'

const port = Number(process.env.IDP_PORT)
const client = JSON.parse(process.env.IDP_CLIENT)
const unverified = new Set((process.env.IDP_UNVERIFIED ?? '').split(',').filter(Boolean))

const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [{ grant_types: ['authorization_code'], response_types: ['code'], ...client }],
  pkce: { required: () => true },
  claims: { email: ['email', 'email_verified'], profile: ['name'] },
  features: { devInteractions: { enabled: true } },
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: id, email_verified: !unverified.has(id), name: id.split('@')[0] }
      },
    }
  },
})
// The development interactions warn on every start; the tests read only the line below.
provider.listen(port, '127.0.0.1', () => console.log(`oidc issuer listening on ${port}`))
