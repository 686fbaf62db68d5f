import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { ensureUiBuilt } from "./scripts/lib/build-ui";

/**
 * Two test projects:
 * - `workers`: everything under test/ except test/node, run inside workerd with real D1 and
 *   Queues (the same migrations folder that `wrangler d1 migrations apply` uses).
 * - `node`: test/node, plain Node processes that start the real service (`wrangler dev`), the
 *   admin command line or the `galileo` SDK, as a user would.
 *
 * How long `npm test` takes (the developers' guide: under 12 minutes on a clean clone of a 2-core
 * machine) is decided here and in test/node/migrated-state.ts:
 * - The node files run first, one at a time (`sequence.groupOrder: 0`, `maxWorkers: 1`), then the
 *   workers files two at a time (`groupOrder: 1`, `maxWorkers: 2`; Vitest's default on 2 cores is
 *   one). Each workers file has its own workerd, so they never share state. Two node files side by
 *   side were tried (about 16 min for the whole suite) and failed in a fresh clone: ui-browser's
 *   `wrangler dev` went away mid-file (connection refused) while start-demo's `npm start`s ran,
 *   and the helper who tried it saw wrangler's "restarted mid-request" 503 once; until that is
 *   understood, the processes of one node file at a time.
 * - The node files' servers start from a copy of databases migrated once per set of migrations
 *   (test/node/migrated-state.ts) instead of a minute of `wrangler d1 migrations apply` each;
 *   test/node/start-demo.test.ts still runs `npm start` from an empty directory.
 * - Measured on the shared 2-core machine (load 4 to 8): the node project went from 1,300 s and
 *   1,161 CPU s to about 600 s with two files at a time (726 CPU s without
 *   the template's one build, about 65 more with it); its longest file, admin-cli (about 45 command
 *   line processes of 4 to 5 CPU s each), is what bounds it now. The workers project's files each
 *   apply the migrations in a setup file too (setup: about 6 s a file).
 * - Timeouts only catch a hang, with room for the other file beside: the workers project's are
 *   raised from Vitest's 5 s; the node project's hooks start servers and Chromium, and a node
 *   test may run dozens of command line processes.
 */
export default defineConfig(async () => {
  // wrangler.toml's [assets] directory must exist before the workers pool reads the config, and
  // the browser tests need the page as the sources say it is: build it when it is missing or stale.
  await ensureUiBuilt();
  const migrations = await readD1Migrations("migrations");
  const shardMigrations = await readD1Migrations("migrations/shard");
  return {
    test: {
      projects: [
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                bindings: {
                  TEST_MIGRATIONS: migrations,
                  TEST_SHARD_MIGRATIONS: shardMigrations,
                  TOKEN_SECRET: "test-token-secret-of-sufficient-length",
                  // Requests per operation of test/openapi-fuzz.test.ts (`FUZZ_RUNS=500 npx vitest run test/openapi-fuzz.test.ts`).
                  FUZZ_RUNS: process.env.FUZZ_RUNS ?? "",
                  // The search tests run hundreds of scan-class searches for one organization back
                  // to back, which the default 10% scan-time share (wrangler.toml) would rightly
                  // refuse; test/organization-limits.test.ts checks that share with the default.
                  ORG_SCAN_TIME_PERCENT: "100",
                  // One page of 100 roots per export queue message: the tests' exports span several
                  // messages, so the partial part is carried between them (test/export-url.test.ts).
                  EXPORT_PAGES_PER_MESSAGE: "1",
                  // A bound the test datasets reach, so that searches run both with the text index
                  // and past its bound (the scan); test/text-index-search.test.ts checks both.
                  TEXT_INDEX_MAX_CANDIDATES: "40",
                  // Records a metrics request may scan: a backlog the test writes by SQL in seconds
                  // passes it (test/metrics-scan-bound.test.ts); the other metrics tests stay under.
                  METRICS_SCAN_MAX_RECORDS: "3000",
                },
                // An empty database for the migration tests (test/migrations.test.ts), which apply
                // the migrations step by step with data in between.
                d1Databases: { MIGRATION_TEST_DB: "migration-test-db" },
                // wrangler.toml's deletion consumer with max_retries 1 instead of 8, so that the
                // dead-letter path runs end to end in seconds (test/deletion-queue-integration.test.ts).
                queueConsumers: {
                  "trace-store-deletions": { maxBatchSize: 1, maxBatchTimeout: 1, maxRetries: 1, deadLetterQueue: "trace-store-deletions-dlq" },
                  // Moves likewise: a move whose message fails twice is paused within seconds.
                  "trace-store-moves": { maxBatchSize: 1, maxBatchTimeout: 1, maxRetries: 1, deadLetterQueue: "trace-store-moves-dlq" },
                  "trace-store-exports": { maxBatchSize: 1, maxBatchTimeout: 1, maxRetries: 2 },
                  // wrangler.toml's upkeep consumer; max_batch_timeout 1 s as the others here.
                  "trace-store-upkeep": { maxBatchSize: 1, maxBatchTimeout: 1, maxRetries: 10 },
                },
              },
            }),
          ],
          test: {
            name: "workers",
            include: ["test/**/*.test.ts"],
            exclude: ["test/node/**"],
            setupFiles: ["./test/support/apply-migrations.ts"],
            maxWorkers: 2,
            sequence: { groupOrder: 1 },
            // Vitest's 5 s (10 s for hooks) only catch a hang; with two files at a time on a busy
            // machine a test of a few seconds took over 5 (test/search-operators.test.ts). Tests
            // that measure time assert it themselves.
            testTimeout: 20_000,
            hookTimeout: 30_000,
          },
        },
        {
          test: {
            name: "node",
            environment: "node",
            include: ["test/node/**/*.test.ts"],
            maxWorkers: 1,
            sequence: { groupOrder: 0 },
            testTimeout: 360_000,
            hookTimeout: 600_000,
          },
        },
      ],
    },
  };
});
