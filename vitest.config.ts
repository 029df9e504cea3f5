import { defineConfig } from 'vitest/config'

/** The files of `npm run test:containers` alone. */
const containerSuite = [
  'packages/testcontainers/test/containers.test.ts',
  'packages/testcontainers/test/example.test.ts',
  'scripts/containers/newcomer.test.ts',
]

export default defineConfig({
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'packages/*/test/**/*.test.ts',
      'apps/*/src/**/*.test.ts',
      'apps/*/test/**/*.test.ts',
      'scripts/**/*.test.ts',
      'deploy/**/*.test.ts',
    ],
    // The container suite (the image and compose, the testcontainers package, and the newcomer's
    // whole set-up run inside a container: minutes each) runs as `npm run test:containers`, which CI
    // runs too, not in every `npm test`.
    exclude: ['**/node_modules/**', ...(process.env.ROSTER_TEST_CONTAINER_SUITE === '1' ? [] : containerSuite)],
    globalSetup: ['packages/testing/src/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: integration files start real processes, so run at most two files at once.
    maxWorkers: 2,
    reporters: ['default', './packages/testing/src/summary-reporter.ts'],
  },
})
