import { configDefaults, defineConfig } from 'vitest/config';

// Two projects: test/unit needs no server and runs in seconds; every other tier shares one dev server, one Java
// test server and one Chromium, started once for the whole run (test/support/global-setup.ts). `npm test` runs both.
export default defineConfig({
  test: {
    setupFiles: ['test/support/quiet-runtime.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'servers',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/unit/**'],
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
    ],
  },
});
