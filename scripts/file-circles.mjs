#!/usr/bin/env node
// `npm run lint` (its last step): no file circles. A circle of imports between source files (type-only
// edges too: they are a design's circle all the same) fails the lint, naming its files; the fix is to
// move what the files share into a module of its own that each imports.
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const SKIP = new Set(['dist', 'node_modules', 'generated', 'test'])
const files = []
const walk = (dir) => {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) {
      if (!SKIP.has(entry)) walk(path)
    } else if (/\.tsx?$/.test(entry) && !/\.(test|d)\.tsx?$/.test(entry)) files.push(resolve(path))
  }
}
for (const area of ['apps', 'packages'])
  for (const pkg of readdirSync(join(root, area))) {
    const src = join(root, area, pkg, 'src')
    if (statSync(join(root, area, pkg)).isDirectory() && readdirSync(join(root, area, pkg)).includes('src')) walk(src)
  }

const known = new Set(files)
const edges = new Map(
  files.map((file) => {
    const text = readFileSync(file, 'utf8')
    const to = []
    for (const m of text.matchAll(/(?:import|export)[^'"]*?from\s+'(\.[^']+)'/g)) {
      const base = resolve(dirname(file), m[1].replace(/\.js$/, ''))
      const target = [`${base}.ts`, `${base}.tsx`].find((t) => known.has(t))
      if (target) to.push(target)
    }
    return [file, to]
  }),
)

// Tarjan's strongly connected components: each of more than one file is a circle.
let next = 0
const index = new Map()
const low = new Map()
const stack = []
const onStack = new Set()
const circles = []
function visit(v) {
  index.set(v, next)
  low.set(v, next++)
  stack.push(v)
  onStack.add(v)
  for (const w of edges.get(v)) {
    if (!index.has(w)) {
      visit(w)
      low.set(v, Math.min(low.get(v), low.get(w)))
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)))
  }
  if (low.get(v) !== index.get(v)) return
  const part = []
  let w
  do {
    w = stack.pop()
    onStack.delete(w)
    part.push(w)
  } while (w !== v)
  if (part.length > 1) circles.push(part)
}
for (const f of files) if (!index.has(f)) visit(f)

if (circles.length) {
  for (const c of circles) console.error(`file circle: ${c.map((f) => relative(root, f)).join(' <-> ')}`)
  process.exit(1)
}
