import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { settingsReference, undescribedSettings } from './settings-reference.js'

const page = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'docs', 'settings.md')

it('describes every setting of every process in its schema', () => {
  expect(undescribedSettings()).toEqual([])
})

it('docs/settings.md is what the schemas say (npm run -s docs:settings writes it again)', () => {
  expect(readFileSync(page, 'utf8')).toBe(settingsReference())
})

it('shows defaults as the schemas fill them in, per process where they differ', () => {
  const row = (name: string) =>
    settingsReference()
      .split('\n')
      .find((l) => l.startsWith(`| \`${name}\` `))
  expect(row('PORT')).toContain('`3000` (api); `3100` (runtime)')
  expect(row('DATABASE_URL')).toContain('`postgresql://postgres@127.0.0.1:5432/roster`')
  expect(row('OTEL_EXPORTER_OTLP_ENDPOINT')).toMatch(
    /^\| `OTEL_EXPORTER_OTLP_ENDPOINT` \| unset \| api, worker, runtime \|/,
  )
  expect(row('REGIONAL_HOSTS')).toMatch(/\| empty \| api \|/)
})
