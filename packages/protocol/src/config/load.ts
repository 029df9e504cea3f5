import type { z } from 'zod'

// Reading a process's settings from the environment, once at start-up: every bad variable named.

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`)
    this.name = 'ConfigError'
  }
}

/** Parses the environment once; every bad variable is named in the error. */
export function loadConfig<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  // Empty strings count as unset, as in most shells' `VAR= cmd`.
  const input = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''))
  const parsed = schema.safeParse(input)
  if (parsed.success) return parsed.data
  throw new ConfigError(
    parsed.error.issues.map((i) => {
      const name = String(i.path[0] ?? '?')
      const value = env[name]
      const shown = value === undefined ? 'unset' : /KEY|TOKEN/.test(name) ? 'set (hidden)' : JSON.stringify(value)
      return `${name}: ${i.message} (${shown})`
    }),
  )
}

/** For main modules: parse or print the problems and exit. */
export function loadConfigOrExit<S extends z.ZodObject>(
  schema: S,
  processName: string,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  try {
    return loadConfig(schema, env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${processName}: ${err.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
}
