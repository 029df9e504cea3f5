import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { expect, it } from 'vitest'
import { repoRoot } from '@roster/testing'

// Every statement on a table lives in one place: packages/shared/src/repositories/, one module per
// table (docs/development.md lists them). Raw SQL and Prisma's table calls anywhere else in the
// product's sources are refused here, so a new query goes where the next reader will look for it.

const REPOSITORIES = 'packages/shared/src/repositories/'
const ALLOWED = new Set(['packages/shared/src/db.ts']) // pingDatabase: a round trip, no table

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return e.name === 'generated' || e.name === 'node_modules' ? [] : sources(path)
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : []
  })
}

// packages/testing is not the product: its factories plant rows as a test needs them.
const product = ['apps', 'packages'].flatMap((top) =>
  readdirSync(join(repoRoot, top)).flatMap((pkg) => {
    if (top === 'packages' && pkg === 'testing') return []
    try {
      return sources(join(repoRoot, top, pkg, 'src'))
    } catch {
      return []
    }
  }),
)

// A statement, a table call, or a piece of SQL built to go in one (Prisma.sql, raw, join, empty).
const STATEMENT =
  /\$(queryRaw|executeRaw)(Unsafe)?\b|\bdb\.[a-z]\w*\.(find\w*|create\w*|update\w*|delete\w*|upsert|count|aggregate|groupBy)\(|\bPrisma\.(sql|raw|join|empty)\b/

it('finds the product sources it guards (the rule below could not fail otherwise)', () => {
  expect(product.length).toBeGreaterThan(100)
  expect(product.filter((f) => relative(repoRoot, f).startsWith(REPOSITORIES)).length).toBeGreaterThan(5)
})

it('keeps every SQL statement, table call and piece of SQL in packages/shared/src/repositories/', () => {
  const strays: string[] = []
  for (const file of product) {
    const rel = relative(repoRoot, file)
    if (rel.startsWith(REPOSITORIES) || ALLOWED.has(rel)) continue
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (STATEMENT.test(line)) strays.push(`${rel}:${i + 1}: ${line.trim()}`)
      })
  }
  expect(strays).toEqual([])
})

it('names each repository after the tables it holds, and docs/development.md lists every one', () => {
  const docs = readFileSync(join(repoRoot, 'docs/development.md'), 'utf8')
  // index.ts is the subpath's entry (@roster/shared/repositories), no table's.
  expect(docs).toContain('@roster/shared/repositories')
  const repositories = readdirSync(join(repoRoot, REPOSITORIES)).filter((f) => f.endsWith('.ts') && f !== 'index.ts')
  const schema = readFileSync(join(repoRoot, 'prisma/schema.prisma'), 'utf8')
  const tables = [...schema.matchAll(/@@map\("(\w+)"\)/g)].map((m) => m[1]!)
  for (const file of repositories) {
    expect(docs, `docs/development.md names repositories/${file}`).toContain(`repositories/${file}`)
    const table = file.replace(/\.ts$/, '').replace(/-/g, '_')
    expect(tables, `${file} is named after a table of the schema`).toContain(table)
  }
  // A table's statements split into sections live in a directory named after it, beside its module.
  const directories = readdirSync(join(repoRoot, REPOSITORIES), { withFileTypes: true }).filter((e) => e.isDirectory())
  for (const dir of directories) {
    expect(repositories, `repositories/${dir.name}/ sits beside repositories/${dir.name}.ts`).toContain(
      `${dir.name}.ts`,
    )
    expect(docs, `docs/development.md names repositories/${dir.name}/`).toContain(`repositories/${dir.name}/`)
  }
})
