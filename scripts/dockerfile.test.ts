import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const root = new URL('../', import.meta.url)
const read = (path: string) => readFileSync(new URL(path, root), 'utf8')

/** Every workspace of the root manifest (`apps/*`, `packages/*`), as `apps/api`. */
function workspaces(): string[] {
  const globs = (JSON.parse(read('package.json')) as { workspaces: string[] }).workspaces
  return globs.flatMap((glob) => {
    const dir = glob.replace(/\/\*$/, '')
    return readdirSync(new URL(`${dir}/`, root), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .filter((e) => {
        try {
          read(`${dir}/${e.name}/package.json`)
          return true
        } catch {
          return false
        }
      })
      .map((e) => `${dir}/${e.name}`)
  })
}

describe('the Dockerfile', () => {
  it('copies every workspace’s manifest before `npm ci` (a missing one leaves its dependencies out and the build fails)', () => {
    const dockerfile = read('Dockerfile')
    const ci = dockerfile.indexOf('RUN npm ci')
    expect(ci).toBeGreaterThan(0)
    const copied = [...dockerfile.slice(0, ci).matchAll(/^COPY (\S+)\/package\.json /gm)].map((m) => m[1])
    const all = workspaces()
    expect(all).toContain('apps/console')
    expect(copied.sort()).toEqual(all.sort())
  })
})
