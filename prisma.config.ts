// Prisma CLI configuration (Prisma 7 reads the datasource URL here, not in the schema).
// Roster applies migrations with its own offline runner (scripts/db-migrate.mjs); this file keeps
// `prisma migrate deploy` working wherever Prisma's schema-engine binary can be downloaded.
import { defineConfig } from 'prisma/config'

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/roster' },
})
