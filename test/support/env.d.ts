declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    TEST_SHARD_MIGRATIONS: import("cloudflare:test").D1Migration[];
    MIGRATION_TEST_DB: D1Database;
    SHARD_0: D1Database;
    SHARD_1: D1Database;
  }
}
