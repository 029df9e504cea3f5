import { createHmac, randomBytes } from 'node:crypto'
import { seal, unseal } from '../vault/seal.js'

// A webhook trigger's secret: made by Roster (32 random bytes), shown once, kept sealed with a key
// derived from the vault's master key and bound to its trigger (a sealed secret moved to another
// row does not open). A delivery's signature is checked with it.

const sealingKey = (masterKey: Buffer) => createHmac('sha256', masterKey).update('roster trigger secrets').digest()
const aad = (triggerId: string) => `trigger:${triggerId}`

/** A new secret, as the sender signs with it. */
export const newTriggerSecret = () => `whsec_${randomBytes(32).toString('base64url')}`

export const sealTriggerSecret = (masterKey: Buffer, triggerId: string, secret: string): Buffer =>
  seal(sealingKey(masterKey), Buffer.from(secret), aad(triggerId))

export const unsealTriggerSecret = (masterKey: Buffer, triggerId: string, sealed: Uint8Array): string =>
  unseal(sealingKey(masterKey), Buffer.from(sealed), aad(triggerId)).toString('utf8')
