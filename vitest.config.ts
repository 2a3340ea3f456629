import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Process-level tests spawn the CLI and servers; two cores, so keep parallelism modest.
    maxWorkers: 2,
  },
});
