import { defineConfig } from 'vitest/config'

/** The files of `npm run test:containers` alone. */
const containerSuite = [
  'packages/testcontainers/test/containers.test.ts',
  'packages/testcontainers/test/example.test.ts',
  'packages/testcontainers/test/searx.test.ts',
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
    setupFiles: ['packages/testing/src/process-state-guard.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: integration files start real processes, so run at most two files at once.
    maxWorkers: 2,
    // The suite is CPU-bound on two cores (measured: 98 % busy, the same 467 s with three workers as
    // with two), and most of what each file paid for before a test ran was loading the same modules
    // again: the API's sources, Prisma and the official client (238 s of imports in a 643 s run).
    // A worker keeps what it loaded for its next file (files start their own servers, databases and
    // Redis prefixes; process-state-guard.ts fails a file that leaves process-wide state behind), and the
    // workspace packages' built code is loaded by Node itself, not through Vite's transform.
    isolate: false,
    server: { deps: { external: [/\/(packages|apps)\/[^/]+\/dist\//] } },
    reporters: ['default', './packages/testing/src/summary-reporter.ts'],
  },
})
