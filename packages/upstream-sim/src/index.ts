export * from './server.js'
export * from './settings.js'
export { sampleFor, countTokens } from './content.js'
export { recordings, recordingBytes, replayModel, cutPieces, RECORDINGS_DIR, type Recording } from './replay.js'
