import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { createDb, type Db } from '@roster/shared'
import { adminUrl, serverUrl, templateName, TEST_DB_PREFIX } from './env.js'

export interface TestDatabase {
  url: string
  db: Db
  drop(): Promise<void>
}

async function admin<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl() })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/** A fresh, migrated database cloned from the template; one per test file. */
export async function createTestDatabase(poolSize = 10): Promise<TestDatabase> {
  // The creation time is part of the name, so a later run's cleanup can tell leftovers of killed
  // runs from databases another run is using right now.
  const name = `${TEST_DB_PREFIX}${Date.now().toString(36)}_${randomBytes(6).toString('hex')}`
  await admin(async (c) => {
    // Cloning fails while another session is connected to the template; retry briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        await c.query(`CREATE DATABASE "${name}" TEMPLATE "${templateName()}"`)
        return
      } catch (err) {
        if ((err as { code?: string }).code !== '55006' || attempt > 50) throw err
        await new Promise((r) => setTimeout(r, 100))
      }
    }
  })
  const url = serverUrl(name)
  const db = createDb({ url, poolSize })
  return {
    url,
    db,
    async drop() {
      await db.$disconnect()
      await admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`))
    },
  }
}
