// Writes a gzip and a brotli copy beside each built text file, so the API sends them as they are
// (@fastify/static's preCompressed) rather than compressing on every request.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'

const walk = (dir) =>
  readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? walk(join(dir, f)) : [join(dir, f)]))
for (const file of walk(new URL('dist', import.meta.url).pathname)) {
  if (!/\.(html|js|css|svg|json)$/.test(file)) continue
  const body = readFileSync(file)
  writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }))
  writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }))
}
