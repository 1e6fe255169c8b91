// Test settings shared by every package: unit and integration tests run together; integration tests
// (`*.int.test.ts`) start real servers, so timeouts are generous. Each package also writes a JSON
// report that scripts/test-summary.mjs adds up into the closing line of `npm test`.
import { defineConfig } from 'vitest/config';

export const sharedTestConfig = defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    reporters: ['default', ['json', { outputFile: '.test-results/vitest.json' }]],
  },
});
