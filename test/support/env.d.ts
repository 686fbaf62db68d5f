declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    /** Requests per operation of the OpenAPI fuzz (vitest.config.ts); empty for its default. */
    FUZZ_RUNS: string;
    TEST_SHARD_MIGRATIONS: import("cloudflare:test").D1Migration[];
    MIGRATION_TEST_DB: D1Database;
    SHARD_0: D1Database;
    SHARD_1: D1Database;
  }
}

/** Files imported as text by tests (`import text from "../README.md?raw"`: Vite's raw import). */
declare module "*?raw" {
  const text: string;
  export default text;
}
