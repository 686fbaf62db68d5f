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
 * How long `npm test` takes (issue 36: at most 10 minutes on a clean clone of a quiet 2-core
 * machine) is decided here and in test/node/migrated-state.ts:
 * - Node and workers files run together, two at a time (one group: the same `sequence.groupOrder`
 *   and `maxWorkers: 2`; Vitest's default on 2 cores is one; within the group the node project's
 *   files are handed out first, as they are the longest). Each workers file has its own workerd,
 *   so they never share state; each node file starts its own servers on system-picked ports, the
 *   inspector's too (`--inspector-port 0`: two wranglers probing 9229 at once both took it and
 *   one died), and its HTTP clients open a connection per request (test/node/no-keep-alive.ts:
 *   wrangler dev closes idle connections after 5 s).
 * - The node files' servers start from a copy of databases migrated once per set of migrations
 *   (test/node/migrated-state.ts) instead of a minute of `wrangler d1 migrations apply` each;
 *   test/node/start-demo.test.ts still runs `npm start` from an empty directory.
 * - Figures (docs/benchmarks.md, "The test suite"): 783 s on a quiet 2-core machine before issue
 *   36 (1,080 tests, node files one at a time, then workers files two at a time). The clean-clone
 *   run of 2026-11-29 00:17 (commit 7f803a9, 1,256 tests in 110 files, load 6 to 10 from other
 *   work beside it): 1,957 s, `npm ci` 86 s and `npm test` 1,871 s. After this round's cuts
 *   (clean clone of f617298 at 02:15, 1,293 tests in 117 files, load 5 to 9): 1,663 s, `npm ci`
 *   76 s and `npm test` 1,587 s. The target is not met.
 * - What bounds the suite is CPU, in processes the node files start: node files 1,709 s of the
 *   two lanes' 2,304 s. admin-cli alone 557 s (about 45 commands, each `npm run admin` (1.5 CPU s)
 *   and one `wrangler d1 execute --local` (4 CPU s, half of it loading wrangler's 12.7 MB bundle)),
 *   start-demo 264 s (two `npm start`: each three `wrangler d1 migrations apply` of 4 CPU s and a
 *   `wrangler dev`), the five browser files 573 s (an `npm start` and a Chromium each),
 *   shard-backup 96 s (a dozen wrangler commands). The 90 workers files take 594 s together; each
 *   has its own workerd (per-file storage). The lanes' last files ended 11 s apart: ordering is
 *   not what is left to gain.
 * - Done after that run: the admin command line's local SQL runs in its own process, one
 *   workerd of wrangler's miniflare on the same state files for every database and call of a
 *   command (scripts/lib/local-d1.ts; `--remote` stays with wrangler), instead of a `wrangler d1
 *   execute` (4 CPU s) per call: admin-cli alone 248 -> 210 CPU s (load 8-17; its move test, which
 *   polled with one wrangler per second, 263 -> 61 s), shard-backup 55 -> 31 CPU s, start-demo
 *   alone 423 -> 186 s (its second start 102 -> 20 s); `npm start`
 *   runs wrangler's three migration applies only when a local database lacks a migration
 *   (scripts/lib/local-migrations.ts), which every browser file's start and start-demo's second
 *   start skip (about 12 CPU s each). Expected: about 300 s less lane time, roughly 150 s less wall
 *   (near 1,430 s; the target is still not met). What bounds it then: CPU per process the node files start (an
 *   admin command is still about 4 CPU s: Node and tsx 1.2, loading miniflare 1.1, a workerd 1.5;
 *   a browser file one `npm start` and one Chromium) and openapi-fuzz (100 s in workerd).
 * - Next cuts: fewer admin processes where one command can assert what two do, one workerd for
 *   the workers files that need no storage of their own, openapi-fuzz's fixed costs. Done before: `npm run admin` and
 *   `npm start` run as one Node process (`node --import tsx`: 0.8 CPU s against the `tsx`
 *   command's 1.1 per start), which also ends tsx's signal relay (scripts/start.ts).
 * - Each workers file's fixed cost (2026-11-29, branch t36d): every file has its own workerd, and
 *   its first `import "cloudflare:test"` loads the whole worker (the plugin appends `import
 *   main`) one module at a time over the runner's socket: 601 fetches, 329 of them node_modules
 *   (zod 94, protobuf 66, drizzle 90, hono 40). That, not the migrations, was Vitest's "setup"
 *   (7.8 s of a file's 8.9 at load 1.5; the migrations 1.1 s). Now the worker's dependencies are
 *   pre-bundled once per run by Vitest's SSR deps optimizer (`deps.optimizer.ssr` below: 293
 *   fetches, a file's setup 3.3 s at load 1.5), and test/support/apply-migrations.ts sends each
 *   database's missing migrations in one batch, the three databases side by side (2.6 -> 1.45 s
 *   per file at load 11). 13 small workers files: 132.5 -> 116.9 CPU s (load 8-11). What is left
 *   per file: about 3.5 CPU s of workerd (starting, evaluating the worker's 270 source modules)
 *   and about 4 in Vitest's process (miniflare building and encoding each file's workerd config,
 *   the runner socket's per-message deflate, serving the module fetches). Sharing one workerd
 *   between files would remove most of it, but the plugin gives storage per workerd, not per file.
 * - Files that share a workerd (2026-11-29, branch t36e): the plugin (1.5.0) makes one Miniflare
 *   per Vitest pool worker, and Vitest 4 hands a pool worker on from one file to the next of the
 *   same project when the project says `isolate: false` (its Pool keeps the runner while the next
 *   queued file is of the same non-isolated project; projects sort by name, so `workers-shared`'s
 *   files come last and each lane keeps one workerd for all of them). The worker's modules are
 *   then evaluated once per lane, not once per file. The branch ran 67 of the 104 workers files so;
 *   merged with the 11 unit files only (SHARED_WORKERD_FILES below: why, and the candidates). Measured alone at load
 *   10.8-12.6: 14 small files 253 s wall, 127.5 CPU s in their own workerds against 89 s wall,
 *   48.2 CPU s shared (5.7 CPU s less per file); the 11 unit files 87 -> 30 CPU s (load 8). A
 *   file's own test time is unchanged by sharing (search-property 42 s shared, 39 s alone;
 *   filter-sizes 51 / 50, load 9-11; export-pages and openapi-fuzz took as long first in a fresh
 *   workerd as after other files). The 68 together: 915 tests green, 583 s wall, 367 CPU s,
 *   Vitest's setup 58.7 s for all 68 (load 7.4-11). A second run of the 68 (longest first, load
 *   9-12) FAILED: ingest (5 tests saw metrics they did not write: since isolated again),
 *   delete-by-filter (20 s timeouts), otlp-routes and search-property (60 s limits), with D1
 *   "Network connection lost" in the log: not yet explained; run the shared list several times
 *   before relying on it. Expected in `npm test`: Vitest's setup
 *   451 s -> about 215 (the 36 isolated files keep theirs), about 130-170 s less wall, so
 *   `npm test` near 1,100 s at the last run's load: the target is still not met.
 *   `TEST_ISOLATE_ALL=1` gives every file its own workerd again (to tell a sharing failure from
 *   a real one). The property tests' runs (8-25 per property, FUZZ_RUNS for openapi-fuzz) were
 *   not changed: not measured this round, and fewer runs would cover less.
 * - What bounds the suite after this: the node files (admin-cli 202 s, start-demo 139, ui-browser
 *   111 of the last run: processes each test starts) and the long workers files, whose time is
 *   their tests' own (openapi-fuzz 61 s, export-pages 50, deletion-property 42). Not cut here:
 *   export-refusals' waits (a 1.5 s and an 8 s sleep) are the behaviour under test (a slot held
 *   mid-stream; a refusal that outlasts the queue's retries), not polling.
 * - The clean run of 4f3d45b (2026-11-29 11:47, load 1-5; per-file figures from Vitest's JSON
 *   report): Vitest 1,212 s wall, so 2,424 lane-seconds, of which the files' own tests were 1,314
 *   and the rest, about 1,110, each file's setup (a workerd, the worker's modules, the
 *   migrations; about 9 lane-seconds per workers file): per-file setup, not any one file, is now
 *   the largest cost. Longest files: admin-cli 198 s, start-demo 139, ui-browser 109,
 *   ui-alerts-browser 62 (59.5 of it waiting for `npm start`'s minutely cron to fire the rule:
 *   the behaviour under test), openapi-fuzz 60, export-pages 54 (the span sorts with pages of
 *   one root, 214 pages each: kept, they put every tie on a page boundary).
 * - Done on branch t36f (2026-11-29): admin-cli runs its commands through the command line's own
 *   entry point in the test's process (scripts/lib/admin-cli.ts's runAdmin, which
 *   scripts/admin.ts calls), with four real processes kept for what is about the process: alone
 *   646 s and 203 CPU s (load 10-14) -> 139 s and 40 CPU s (load 9.5-20; 68 s at 9.4). And 29
 *   more workers files in the shared workerd (40 in `workers-shared`, green three runs in a row,
 *   below): the 29 in workerds of their own 916 s wall, 295 CPU s (load 16-19); the 40 shared
 *   134-178 s wall, 76-84 CPU s (load 14-17). Expected in `npm test`: about 400 lane-seconds
 *   less (admin-cli's 198 -> about 60 at a quiet run's load; the 29 files' setup, about 9
 *   lane-seconds each), about 200 s of wall, so near 1,010 s for Vitest at the last run's load:
 *   the 10-minute target is still not met. What bounds it then: per-file setup of the 67 workers files still in a workerd each (about 9
 *   lane-seconds each) and the node files that start `npm start` (start-demo 139 s, five browser
 *   files 220 s). Next: more files into `workers-shared` (the list below), once each addition is
 *   green several runs in a row.
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
 * Which files share (lead, at merge, 2026-11-29; t36f): the branch t36e shared 67, and its second
 * run of them together failed (timeouts and D1 "Network connection lost", unexplained), so only
 * the 11 pure unit files were merged. t36f added the 29 candidates whose own tests take about 2 s
 * or less (a workerd of their own cost each more than its tests), leaving out d1-meter (its meter
 * is module state that a previous file's background work could move) and export (a console spy
 * it never restores): `npx vitest run --project workers-shared`, 40 files, green three times in a
 * row at load 14-17 (178, 145, 134 s). The candidates still to add, a few at a time, each after
 * several green runs of that command: annotation-queues, body-limits, body-values,
 * delete-by-filter, evaluations-api, filter-sizes, metrics-property, openapi-fuzz, otlp-deep-text,
 * otlp-fuzz, otlp-routes, password-limits, python-sdk-replay, python-sdk-routing,
 * redaction-ingest, sdk-merge-property, sdk-streaming, search-count, search-operators,
 * search-property, search-sort, search-validation, validation, deletion-api, export-pages,
 * d1-meter, export (the last two after the fixes above). The long ones gain least: a file's own
 * test time is unchanged by sharing.
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
  // Added by t36g (2026-11-29): green three runs in a row of `--project workers-shared` (48 files).
  "test/annotation-queues.test.ts",
  "test/body-limits.test.ts",
  "test/export.test.ts",
  "test/otlp-deep-text.test.ts",
  "test/redaction-ingest.test.ts",
  "test/search-operators.test.ts",
  "test/search-validation.test.ts",
  "test/validation.test.ts",
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
