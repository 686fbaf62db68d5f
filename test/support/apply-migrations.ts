import { applyD1Migrations, env } from "cloudflare:test";

// Setup files run outside per-file storage isolation and may run more than once;
// applyD1Migrations only applies what is missing. The catalog, then every data shard.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
for (const shard of (env.DATA_SHARDS ?? "").split(",").filter((name) => name && name !== "DB")) {
  await applyD1Migrations((env as unknown as Record<string, D1Database>)[shard]!, env.TEST_SHARD_MIGRATIONS);
}
