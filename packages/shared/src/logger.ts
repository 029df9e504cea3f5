import { pino, type Logger, type LoggerOptions } from 'pino'

/** Paths that must never reach a log line: credentials in headers, keys and secrets in bodies. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'authorization',
  'key',
  'apiKey',
  'plaintext',
  'secret',
  'value',
  'masterKey',
  '*.key',
  '*.apiKey',
  '*.plaintext',
  '*.secret',
  '*.token',
  '*.masterKey',
  'config.VAULT_MASTER_KEY',
]

export function loggerOptions(name: string, level: string): LoggerOptions {
  return { name, level, redact: { paths: redactPaths, censor: '[redacted]' } }
}

/**
 * Whether a server logs a line per request: only at debug and trace. At thousands of requests a
 * second (polls, the reconciler's listings, the gateway) such lines would bury everything else.
 */
export const logsEachRequest = (level: string) => level === 'debug' || level === 'trace'

export function createLogger(name: string, level = 'info'): Logger {
  return pino(loggerOptions(name, level))
}

export type { Logger }
