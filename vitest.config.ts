import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { ensureUiBuilt } from "./scripts/lib/build-ui";

/**
 * Two test projects (three with `workers-shared`, below):
 * - `workers`: everything under test/ except test/node, run inside workerd with real D1 and
 *   Queues (the same migrations folder that `wrangler d1 migrations apply` uses).
 * - `node`: test/node, plain Node processes that start the real service (`wrangler dev`), the
 *   admin command line or the `galileo` SDK, as a user would.
 *
 * How long `npm test` takes (issue 36: at most 10 minutes on a clean clone of a quiet 2-core
 * machine; the history of every cut: bench/results/test-suite-history.md):
 * - `npm run typecheck` (scripts/typecheck.ts): the four TypeScript projects in one command, two
 *   lanes, each project reporting its own files (src/ checked once, not again by scripts/ and
 *   bench/): 111 -> 96 CPU s (four `tsc` runs at load 2 / one command at load 9-10), wall about
 *   the root project's alone (~45 s quiet) instead of the four runs' sum (~75 s).
 * - Node and workers files run together, two at a time (one group: `sequence.groupOrder`,
 *   `maxWorkers: 2`; the node project's files, the longest, are handed out first). Each node file
 *   starts its own servers on system-picked ports (the inspector's too) from a copy of databases
 *   migrated once per set of migrations (test/node/migrated-state.ts); its HTTP clients open a
 *   connection per request (test/node/no-keep-alive.ts). `npm start` applies the migrations its
 *   local databases lack in process, one workerd for the three (scripts/lib/local-migrations.ts;
 *   wrangler's three `d1 migrations apply` were 119 CPU s, 303 s wall at load 11; now 15 CPU s,
 *   29 s), so start-demo's first start no longer pays them.
 * - Each workers file in a workerd of its own costs about 9 lane-seconds of setup (a workerd, the
 *   worker's modules, the migrations; the worker's dependencies are pre-bundled once per run,
 *   `deps.optimizer.ssr`, and test/support/apply-migrations.ts sends one batch per database).
 *   61 files share one workerd per lane instead (`workers-shared`, SHARED_WORKERD_FILES below).
 * - Last clean run (f2142c4, 2026-11-29 18:22, load 2-7): `npm test` about 1,040 s (typecheck
 *   40 s, Vitest 1,002 s, 1,420 tests in 138 files, all green; `npm ci` 82 s before it), down
 *   from about 1,180 s at 9c3562b. Longest files: ui-browser 114 s, ui-alerts-browser 63 (mostly
 *   waiting for the minutely cron: the behaviour under test), openapi-fuzz 56, export-pages 53,
 *   start-demo 46 (142 before its first start migrated in process), admin-cli 43,
 *   deletion-property 42, provision 40. The 10-minute target is not met.
 * - What bounds the suite now: lane time, about 2,200 lane-seconds: per-file setup of the ~46
 *   workers files still in a workerd each (~410), the node files that start `npm start` and a
 *   Chromium (start-demo, the six browser files: ~450), and the long workers files whose time is
 *   their own tests' (openapi-fuzz, export-pages, deletion-property, sdk-merge-property).
 * - Timeouts only catch a hang, with room for the other file beside: the workers project's are
 *   raised from Vitest's 5 s; the node project's hooks start servers and Chromium, and a node
 *   test may run dozens of command line processes.
 */
/**
 * Workers files that run in one shared workerd (`isolate: false`: Vitest hands a pool worker, and
 * so the plugin's Miniflare, from one of these files to the next), instead of one workerd each.
 * They share storage, queues and the worker's module state, so each one only reads and writes
 * what it created itself (its own organizations, under ids no other file uses) and never counts
 * or sweeps global state (every row of a table, every organization, the queues' messages, the
 * shards' placement, scheduled sweeps over all organizations). Left in their own workerd for
 * that reason: files that run the cron (`scheduled`: its sweeps cover every organization:
 * retention, token-revocation, evaluations-due, alerts-api, deletion-erasure, export-url), that
 * snapshot whole tables (fault-injection), count dead-letter or queue traffic (deletion-consumer,
 * deletion-queue-integration, alerts-evaluation-fanout), move projects or read shard placement
 * (project-moves*, partitions*, sharding, analytics-settings-move, annotation-erasure and the
 * other shard-aware files), compare query plans (*-query-plans: plans follow table statistics),
 * pause or time the upkeep (rollups, text-index-search, text-index-lag-bound, metrics-scan-bound,
 * upkeep), apply migrations step by step (migrations), or count an organization's requests in a
 * time window (organization-limits). A file that fails only when shared (`TEST_ISOLATE_ALL=1`
 * passes) belongs out of this list.
 */
/*
 * Which files share: t36f's 40 (the 11 unit files and 29 candidates whose tests take about 2 s or
 * less), green three runs in a row; t36g added 8 (48 files: `npx vitest run --project
 * workers-shared` green three runs in a row, 152-175 s wall, 96-103 CPU s at load 9-13), then 6
 * more (54 files, 728 tests: green three runs in a row, 196, 253, 269 s wall, 122-162 CPU s at
 * load 7-11). t36h added 5 (59 files, 801 tests: evaluations-api, filter-sizes, password-limits,
 * python-sdk-replay, search-count; green three runs in a row, 165, 169, 158 s wall, 147-159 CPU s
 * at load 5-7), then export-pages and openapi-fuzz (61 files, 854 tests: green three runs in a
 * row, 317, 161, 140 s wall, 214-310 CPU s at load 2-5; in the first, each first in its lane, the
 * two took 146 and 166 s, then 53-77 s). Kept out, as they sweep every database: search-property
 * (interrupted at its 60 s limit when shared, also in t36e's run: its catchUpTextIndexesEverywhere
 * indexes the records every earlier file of the lane left too), otlp-routes, delete-by-filter and
 * sdk-merge-property (textIndexDifferencesEverywhere: the same catch-up, then the whole index
 * compared), metrics-property (refreshes every database's metric cells). Still to try, after three
 * green runs of that command: d1-meter (its meter is module state that a previous file's
 * background work could move). The long ones gain least: a file's own test time is unchanged by
 * sharing.
 */
const SHARED_WORKERD_FILES = [
  // The pure unit files (lead, at merge, 2026-11-29).
  "test/alerts-rules-unit.test.ts",
  "test/annotation-aggregates-unit.test.ts",
  "test/db-client-unit.test.ts",
  "test/deletion-chunk-sizer-unit.test.ts",
  "test/evaluations-presets-unit.test.ts",
  "test/otlp-mapping-unit.test.ts",
  "test/pricing-unit.test.ts",
  "test/redaction-custom-patterns-unit.test.ts",
  "test/redaction-detectors-unit.test.ts",
  "test/search-compile-unit.test.ts",
  "test/search-normalize-unit.test.ts",
  // The candidates whose own tests take about 2 s or less in a clean run (2026-11-29, t36f): a
  // workerd of their own cost each more than its tests (see the comment above and docs/benchmarks.md).
  "test/annotation-feedback.test.ts",
  "test/annotation-ratings.test.ts",
  "test/annotation-search.test.ts",
  "test/annotation-templates.test.ts",
  "test/columns.test.ts",
  "test/cross-site-requests.test.ts",
  "test/d1-round-trips.test.ts",
  "test/database-errors.test.ts",
  "test/early-refusals.test.ts",
  "test/evaluations-judges.test.ts",
  "test/export-record-json.test.ts",
  "test/future-dates.test.ts",
  "test/ingest-limits.test.ts",
  "test/metric-cell-coverage.test.ts",
  "test/metrics-answer-json.test.ts",
  "test/metrics-search.test.ts",
  "test/parent-chains.test.ts",
  "test/pricing.test.ts",
  "test/queue-search-filters.test.ts",
  "test/scan-classification.test.ts",
  "test/sdk-wire-format.test.ts",
  "test/search-isolation.test.ts",
  "test/search-page-budget.test.ts",
  "test/search-projection.test.ts",
  "test/security-headers.test.ts",
  "test/shard-schema.test.ts",
  "test/tenancy.test.ts",
  "test/text-index-reads.test.ts",
  "test/token-secret.test.ts",
  // Added by t36g (2026-11-29): green three runs in a row of `--project workers-shared` (48, then 54 files).
  "test/annotation-queues.test.ts",
  "test/body-limits.test.ts",
  "test/export.test.ts",
  "test/otlp-deep-text.test.ts",
  "test/redaction-ingest.test.ts",
  "test/search-operators.test.ts",
  "test/search-validation.test.ts",
  "test/validation.test.ts",
  "test/body-values.test.ts",
  "test/deletion-api.test.ts",
  "test/otlp-fuzz.test.ts",
  "test/python-sdk-routing.test.ts",
  "test/sdk-streaming.test.ts",
  "test/search-sort.test.ts",
  // Added by t36h (2026-11-29): green three runs in a row of `--project workers-shared` (59 files).
  "test/evaluations-api.test.ts",
  "test/filter-sizes.test.ts",
  "test/password-limits.test.ts",
  "test/python-sdk-replay.test.ts",
  "test/search-count.test.ts",
  // t36h's second batch, green three runs in a row (61 files): the two long ones, which gain least.
  "test/export-pages.test.ts",
  "test/openapi-fuzz.test.ts",
];

// `TEST_ISOLATE_ALL=1 npx vitest run ...` runs every workers file in a workerd of its own again: to
// tell whether a failure comes from sharing, and to measure what sharing saves.
const sharedWorkerdFiles = process.env.TEST_ISOLATE_ALL === "1" ? [] : SHARED_WORKERD_FILES;

export default defineConfig(async () => {
  // wrangler.toml's [assets] directory must exist before the workers pool reads the config, and
  // the browser tests need the page as the sources say it is: build it when it is missing or stale.
  await ensureUiBuilt();
  const migrations = await readD1Migrations("migrations");
  const shardMigrations = await readD1Migrations("migrations/shard");
  return {
    test: {
      projects: [
        workersProject({ name: "workers", include: ["test/**/*.test.ts"], exclude: ["test/node/**", ...sharedWorkerdFiles], isolate: true }, migrations, shardMigrations),
        ...(sharedWorkerdFiles.length > 0 ? [workersProject({ name: "workers-shared", include: sharedWorkerdFiles, exclude: [], isolate: false }, migrations, shardMigrations)] : []),
        {
          test: {
            name: "node",
            environment: "node",
            include: ["test/node/**/*.test.ts"],
            // No keep-alive in the test clients: wrangler dev closes idle connections after 5 s.
            setupFiles: ["./test/node/no-keep-alive.ts"],
            maxWorkers: 2,
            sequence: { groupOrder: 0 },
            testTimeout: 360_000,
            hookTimeout: 600_000,
            // expect.poll waits 1 s by default: a browser test's save, answered and re-read, took
            // longer than that beside another file at load 12-14 (ui-annotations-browser's ratings).
            // A poll that passes returns at once; this only bounds how long one may wait. 60 s, as
            // the browser contexts' waits (test/node/browser-session.ts, BROWSER_WAIT_MS): CI runs
            // at load 8-15 on 2 cores, where 15 s and 30 s waits failed stops 38 and 39.
            expect: { poll: { timeout: 60_000 } },
          },
        },
      ],
    },
  };
});

type Migrations = Awaited<ReturnType<typeof readD1Migrations>>;

function workersProject(
  { name, include, exclude, isolate }: { name: string; include: string[]; exclude: string[]; isolate: boolean },
  migrations: Migrations,
  shardMigrations: Migrations,
) {
  return {
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
              // Records a substring search may scan while the index lags past that bound: a
              // backlog written by SQL passes it (test/text-index-lag-bound.test.ts).
              TEXT_INDEX_LAG_SCAN_MAX_RECORDS: "3000",
              // Records a metrics request may scan: a backlog the test writes by SQL in seconds
              // passes it (test/metrics-scan-bound.test.ts); the other metrics tests stay under.
              METRICS_SCAN_MAX_RECORDS: "3000",
              // Channels may point at 127.0.0.1 (as under wrangler dev), and a failing delivery
              // gives up after its second attempt instead of retrying for 24 hours in the background.
              // The upkeep at once after each write, as before its coalescing: the suite's tests that
              // wait for derived data keep their timing; test/upkeep.test.ts sets the coalescing
              // itself where it tests it (src/upkeep/upkeep-pace.ts).
              UPKEEP_COALESCE_SECONDS: "0",
              ALERT_DESTINATIONS: "local",
              JUDGE_DESTINATIONS: "local",
              JUDGE_RETRY_DELAYS_SECONDS: "1",
              ALERT_RETRY_DELAYS_SECONDS: "1",
              ALERT_RETRY_FOR_SECONDS: "1",
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
              "trace-store-alerts": { maxBatchSize: 10, maxBatchTimeout: 1, maxRetries: 2 },
              "trace-store-alert-evaluations": { maxBatchSize: 1, maxBatchTimeout: 1, maxRetries: 2 },
              "trace-store-evaluations": { maxBatchSize: 10, maxBatchTimeout: 1, maxRetries: 2 },
            },
          },
        }),
      ],
      test: {
        name,
        include,
        exclude,
        isolate,
        setupFiles: ["./test/support/apply-migrations.ts"],
        // The worker's dependencies bundled once per run (node_modules/.vite), so that each
        // file's workerd loads a few files instead of 329 modules one fetch at a time (the
        // comment above). Every entry that src/ or a workers test imports is listed: one left
        // out would load a second, unbundled copy beside the bundle's (another class for
        // instanceof, another module state).
        deps: {
          optimizer: {
            ssr: {
              enabled: true,
              include: [
                "@hono/zod-openapi", "hono", "hono/jwt", "hono/http-exception", "drizzle-orm", "drizzle-orm/sqlite-core",
                "drizzle-orm/errors", "drizzle-orm/d1", "drizzle-orm/d1/session", "drizzle-orm/batch",
                "@bufbuild/protobuf", "@bufbuild/protobuf/codegenv2", "zod", "@cfworker/json-schema", "re2js",
                "@asteasolutions/zod-to-openapi", "@scalar/hono-api-reference", "fast-check", "standardwebhooks",
              ],
            },
          },
        },
        maxWorkers: 2,
        sequence: { groupOrder: 0 },
        // Vitest's 5 s (10 s for hooks) only catch a hang; with two files at a time on a busy
        // machine a test of a few seconds took over 5 (test/search-operators.test.ts). Tests
        // that measure time assert it themselves.
        testTimeout: 20_000,
        hookTimeout: 30_000,
      },
    };
}
