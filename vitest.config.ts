import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'apps/*/src/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'scripts/**/*.test.ts', 'deploy/**/*.test.ts'],
    // The newcomer's whole set-up (a test run inside a container: minutes) runs with the container
    // tests (`npm run test:containers`), not in every `npm test`.
    exclude: ['**/node_modules/**', ...(process.env.ROSTER_TEST_NEWCOMER === '1' ? [] : ['scripts/containers/newcomer.test.ts'])],
    globalSetup: ['packages/testing/src/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: integration files start real processes, so run at most two files at once.
    maxWorkers: 2,
    reporters: ['default', './packages/testing/src/summary-reporter.ts'],
  },
})
