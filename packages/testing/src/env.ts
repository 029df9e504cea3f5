// Where tests find Postgres and Redis: DATABASE_URL / REDIS_URL when set (CI and this machine),
// the standard local ports otherwise.
export const TEMPLATE_PREFIX = 'roster_template_'
export const TEST_DB_PREFIX = 'roster_t_'

const base = () => process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres'

/** The same server as DATABASE_URL, another database. */
export function serverUrl(database: string): string {
  const url = new URL(base())
  url.pathname = `/${database}`
  return url.toString()
}

export const adminUrl = () => serverUrl('postgres')
export const redisUrl = () => process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
export const templateName = () => {
  const name = process.env.ROSTER_TEST_TEMPLATE
  if (!name) throw new Error('ROSTER_TEST_TEMPLATE is unset: run tests through vitest with the global setup')
  return name
}
