import { env, type D1Migration } from "cloudflare:test";

// Setup files run outside per-file storage isolation and may run more than once, so only what is
// missing is applied, as the plugin's applyD1Migrations does: the same statements in the same
// order and the same d1_migrations rows. But every missing migration of a database goes in one
// batch (applyD1Migrations sends one per migration: about 60 round trips per file), and the
// catalog and the data shards are migrated side by side. Every workers file pays this in its
// setup (vitest.config.ts).
async function applyMissingMigrations(db: D1Database, migrations: D1Migration[]): Promise<void> {
  await db.prepare(`CREATE TABLE IF NOT EXISTS d1_migrations (
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		name       TEXT UNIQUE,
		applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
	);`).run();
  const applied = new Set((await db.prepare("SELECT name FROM d1_migrations").all<{ name: string }>()).results.map(({ name }) => name));
  const record = db.prepare("INSERT INTO d1_migrations (name) VALUES (?)");
  const statements = migrations
    .filter((migration) => !applied.has(migration.name))
    .flatMap((migration) => [...migration.queries.map((query) => db.prepare(query)), record.bind(migration.name)]);
  if (statements.length > 0) await db.batch(statements);
}

const shards = (env.DATA_SHARDS ?? "").split(",").filter((name) => name && name !== "DB");
await Promise.all([
  applyMissingMigrations(env.DB, env.TEST_MIGRATIONS),
  ...shards.map((shard) => applyMissingMigrations((env as unknown as Record<string, D1Database>)[shard]!, env.TEST_SHARD_MIGRATIONS)),
]);
