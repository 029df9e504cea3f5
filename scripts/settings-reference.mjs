#!/usr/bin/env node
// `npm run -s docs:settings`: writes docs/settings.md from the settings' schemas (after a build).
import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { settingsReference, undescribedSettings } from '../packages/shared/dist/settings-reference.js'

const missing = undescribedSettings()
if (missing.length) {
  console.error(`docs:settings: these settings have no .describe() in their schema: ${missing.join(', ')}`)
  process.exit(1)
}
const file = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'settings.md')
writeFileSync(file, settingsReference())
console.log(`docs:settings: wrote ${file}`)
