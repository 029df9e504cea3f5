import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { isAppError, type Caller } from '@roster/shared'
import { visibleInternScope } from '@roster/shared/interns'
import {
  checkVaultAccess,
  copySecrets,
  deleteSecret,
  EffectiveSecret,
  effectiveSecrets,
  listSecrets,
  notFound,
  SecretCopy,
  SecretName,
  SecretPage,
  SecretWrite,
  storeSecret,
  VaultSecret,
  type VaultAccess,
} from '@roster/shared/vault'
import type { AppDeps } from '../deps.js'
import { refuseUnstorableText } from '../plugins/input-guards.js'
import { callerOf } from '../plugins/caller.js'

/** A write body must stay under 425,000 bytes (the contract's limit); larger is 413. */
export const VAULT_BODY_LIMIT = 424_999

const NameParams = z.object({ name: SecretName })
const InternParams = z.object({ internId: z.string() })
const InternNameParams = z.object({ internId: z.string(), name: SecretName })
const One = z.strictObject({ data: VaultSecret })
const Page = z.strictObject({ data: z.array(VaultSecret), has_more: z.boolean() })
const Copied = z.strictObject({ data: z.array(VaultSecret) })
const EffectivePage = z.strictObject({ data: z.array(EffectiveSecret), has_more: z.boolean() })

/** The vault secrets API (`client.vault.*`): a workspace's pool, and each intern's own vault. */
export const vaultRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    app.addHook('preValidation', refuseUnstorableText)
    const api = app.withTypeProvider<ZodTypeProvider>()
    const config = { errorWire: 'vault' as const }

    /** Runs before the body is read: refusals (401/403/404/503) cost no parsing. */
    const gate = (access: Omit<VaultAccess, 'regional'>) => async (req: FastifyRequest) => {
      const caller = await deps.authenticate(req)
      checkVaultAccess(caller, { ...access, regional: deps.config.REGIONAL_HOSTS.includes(req.hostname.toLowerCase()) })
      req.caller = caller
    }
    const workspaceVault = (req: FastifyRequest, create: boolean) =>
      deps.vault.workspaceVault(deps.db, callerOf(req).workspaceId, create)

    /** The intern's vaults, when this caller may see the intern (an intern key: its own alone); else the vault's 404. */
    async function internVaults(caller: Caller, internId: string) {
      const intern = await visibleInternScope(deps.db, caller, internId).catch((err) => {
        throw isAppError(err) && err.reason === 'not_found' ? notFound() : err
      })
      if (!intern.vault_id) throw notFound()
      return { own: intern.vault_id, attached: intern.attached_vault_id }
    }

    // The workspace's pool.
    api.put(
      '/vault/secrets/:name',
      {
        onRequest: gate({ write: true, internScope: false }),
        bodyLimit: VAULT_BODY_LIMIT,
        config,
        schema: {
          operationId: 'storeVaultSecret',
          summary: 'Store (create or replace) a workspace secret',
          params: NameParams,
          body: SecretWrite,
          response: { 200: One },
        },
      },
      async (req) => ({
        data: await storeSecret(
          deps.db,
          deps.vault,
          (await workspaceVault(req, true))!,
          req.params.name,
          req.body,
          deps.secretStores,
        ),
      }),
    )
    api.delete(
      '/vault/secrets/:name',
      {
        onRequest: gate({ write: true, internScope: false }),
        config,
        schema: { operationId: 'deleteVaultSecret', summary: 'Delete a workspace secret', params: NameParams },
      },
      async (req, reply) => {
        await deleteSecret(deps.db, await workspaceVault(req, false), req.params.name)
        return reply.code(204).send()
      },
    )
    api.get(
      '/vault/secrets',
      {
        onRequest: gate({ write: false, internScope: false }),
        config,
        schema: {
          operationId: 'listVaultSecrets',
          summary: 'Workspace secrets, by name (metadata only)',
          querystring: SecretPage,
          response: { 200: Page },
        },
      },
      async (req) => listSecrets(deps.db, await workspaceVault(req, false), req.query.limit, req.query.offset),
    )

    // One intern's own vault.
    api.put(
      '/vault/interns/:internId/secrets/:name',
      {
        onRequest: gate({ write: true, internScope: true }),
        bodyLimit: VAULT_BODY_LIMIT,
        config,
        schema: {
          operationId: 'storeInternVaultSecret',
          summary: "Store (create or replace) a secret in an intern's vault",
          params: InternNameParams,
          body: SecretWrite,
          response: { 200: One },
        },
      },
      async (req) => {
        const { own } = await internVaults(callerOf(req), req.params.internId)
        return { data: await storeSecret(deps.db, deps.vault, own, req.params.name, req.body, deps.secretStores) }
      },
    )
    api.delete(
      '/vault/interns/:internId/secrets/:name',
      {
        onRequest: gate({ write: true, internScope: true }),
        config,
        schema: {
          operationId: 'deleteInternVaultSecret',
          summary: "Delete a secret from an intern's vault",
          params: InternNameParams,
        },
      },
      async (req, reply) => {
        const { own } = await internVaults(callerOf(req), req.params.internId)
        await deleteSecret(deps.db, own, req.params.name)
        return reply.code(204).send()
      },
    )
    api.get(
      '/vault/interns/:internId/secrets',
      {
        onRequest: gate({ write: false, internScope: true }),
        config,
        schema: {
          operationId: 'listInternVaultSecrets',
          summary: "An intern's secrets, by name (metadata only)",
          params: InternParams,
          querystring: SecretPage,
          response: { 200: Page },
        },
      },
      async (req) =>
        listSecrets(
          deps.db,
          (await internVaults(callerOf(req), req.params.internId)).own,
          req.query.limit,
          req.query.offset,
        ),
    )
    api.post(
      '/vault/interns/:internId/secrets/copy',
      {
        onRequest: gate({ write: true, internScope: true }),
        bodyLimit: VAULT_BODY_LIMIT,
        config,
        schema: {
          operationId: 'copyVaultSecretsToIntern',
          summary: "Copy workspace secrets into an intern's vault (all or nothing)",
          params: InternParams,
          body: SecretCopy,
          response: { 200: Copied },
        },
      },
      async (req) => {
        const { own } = await internVaults(callerOf(req), req.params.internId)
        return { data: await copySecrets(deps.db, deps.vault, await workspaceVault(req, false), own, req.body.names) }
      },
    )
    api.get(
      '/vault/interns/:internId/effective-secrets',
      {
        onRequest: gate({ write: false, internScope: true }),
        config,
        schema: {
          operationId: 'listInternEffectiveSecrets',
          summary:
            "What an intern's outbound requests would receive: one entry per name (intern, then attached, then workspace)",
          params: InternParams,
          querystring: SecretPage,
          response: { 200: EffectivePage },
        },
      },
      async (req) => {
        const { own, attached } = await internVaults(callerOf(req), req.params.internId)
        // The workspace pool is resolved for the intern, whoever asks (an intern key cannot list it itself).
        return effectiveSecrets(
          deps.db,
          { intern: own, attached, workspace: await workspaceVault(req, false) },
          req.query.limit,
          req.query.offset,
        )
      },
    )
  }
