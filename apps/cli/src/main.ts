import { runAdmin } from './admin.js'

// `npm run -s admin -- …` (scripts/admin.mjs) runs this module: the CLI on this process's streams.
process.exit(
  await runAdmin(process.argv.slice(2), {
    env: process.env,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stdin: process.stdin,
  }),
)
