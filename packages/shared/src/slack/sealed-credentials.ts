import { createHmac } from 'node:crypto'
import { seal, unseal } from '../vault/seal.js'

// A Slack link's secrets (the app's client and signing secrets, the bot token once installed),
// sealed together with a key derived from the vault's master key, bound to the intern they serve.

export interface SlackSecrets {
  client_secret: string
  signing_secret: string
  bot_token?: string
}

const sealingKey = (masterKey: Buffer) => createHmac('sha256', masterKey).update('roster slack credentials').digest()
const aad = (internId: string) => `slack:${internId}`

export const sealSlackSecrets = (masterKey: Buffer, internId: string, secrets: SlackSecrets): Buffer =>
  seal(sealingKey(masterKey), Buffer.from(JSON.stringify(secrets)), aad(internId))

export const unsealSlackSecrets = (masterKey: Buffer, internId: string, sealed: Uint8Array): SlackSecrets =>
  JSON.parse(unseal(sealingKey(masterKey), Buffer.from(sealed), aad(internId)).toString('utf8')) as SlackSecrets

/** A workspace's app configuration token and its refresh token, sealed together, bound to the workspace. */
export interface SlackConfigSecrets {
  token: string
  refresh_token: string
}

const configAad = (workspaceId: string) => `slack-config:${workspaceId}`

export const sealSlackConfig = (masterKey: Buffer, workspaceId: string, secrets: SlackConfigSecrets): Buffer =>
  seal(sealingKey(masterKey), Buffer.from(JSON.stringify(secrets)), configAad(workspaceId))

export const unsealSlackConfig = (masterKey: Buffer, workspaceId: string, sealed: Uint8Array): SlackConfigSecrets =>
  JSON.parse(
    unseal(sealingKey(masterKey), Buffer.from(sealed), configAad(workspaceId)).toString('utf8'),
  ) as SlackConfigSecrets
