export * from './server.js'
export * from './settings.js'
export { sampleFor, countTokens } from './content.js'
