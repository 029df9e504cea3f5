import { createRequire } from 'node:module'
import type { Page } from 'playwright-core'

const require = createRequire(import.meta.url)

// For the console's browser tests. The page's context needs `bypassCSP` for axe's script (the
// console's own scripts still run under the policy).

/** axe-core's violations on the page (WCAG 2 A and AA), by rule id. */
export async function axeViolations(page: Page): Promise<string[]> {
  // The console is one page: axe stays loaded from one of its pages to the next.
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: require.resolve('axe-core') })
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(o: object): Promise<{ violations: { id: string }[] }> } }).axe
    const result = await axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] } })
    return result.violations.map((v) => v.id)
  })
}
