// @roster/shared/vault: The vault: sealing, secrets and who may read them.
export * from './seal.js'
export * from './local-vault.js'
export * from './secrets.js'
export * from './access.js'
