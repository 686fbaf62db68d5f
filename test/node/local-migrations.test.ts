/// <reference types="node" />
/**
 * `npm start` reads which migrations the local databases lack and applies them in process
 * (scripts/lib/local-migrations.ts: one workerd, where `wrangler d1 migrations apply` was a process
 * of about 4 CPU s per database): what it reads must be what wrangler would apply, and what it
 * applies must be what wrangler would have, recorded so that wrangler itself finds nothing left.
 * test/node/start-demo.test.ts runs npm start on an empty directory (all pending) and again on
 * the same one (nothing pending).
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeLocalD1, localD1 } from "../../scripts/lib/local-d1";
import { applyLocalMigrations, pendingLocalMigrations } from "../../scripts/lib/local-migrations";
import { runWrangler } from "../../scripts/lib/wrangler";
import { REPO_ROOT, d1Bindings } from "../../scripts/lib/wrangler-config";
import { migratedStateDir } from "./migrated-state";

const sqlFiles = (dir: string) => readdirSync(join(REPO_ROOT, dir)).filter((f) => f.endsWith(".sql")).sort();

let migrated: string;
let empty: string;
let fresh: string;

beforeAll(async () => {
  migrated = await migratedStateDir("trace-store-pending-");
  empty = mkdtempSync(join(tmpdir(), "trace-store-empty-"));
  fresh = mkdtempSync(join(tmpdir(), "trace-store-fresh-"));
}, 300_000);

afterAll(async () => {
  await closeLocalD1();
  for (const dir of [migrated, empty, fresh]) if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("pendingLocalMigrations", () => {
  it("an empty state directory lacks every migration of every database", async () => {
    const pending = await pendingLocalMigrations(empty);
    expect(Object.keys(pending)).toEqual(d1Bindings());
    expect(pending.DB).toEqual(sqlFiles("migrations"));
    expect(pending.SHARD_1).toEqual(sqlFiles("migrations/shard"));
  });

  it("migrated databases lack nothing; one whose migration row is gone lacks that one", async () => {
    expect(await pendingLocalMigrations(migrated)).toEqual({});
    const last = sqlFiles("migrations/shard").at(-1)!;
    const shard = await localD1("SHARD_1", migrated);
    await shard.prepare("DELETE FROM d1_migrations WHERE name = ?").bind(last).run();
    await closeLocalD1();
    expect(await pendingLocalMigrations(migrated)).toEqual({ SHARD_1: [last] });
  });
});

/** The schema of a local database (every table, index and trigger), to compare two of them. */
async function schemaOf(binding: string, persistTo: string): Promise<unknown[]> {
  const db = await localD1(binding, persistTo);
  const { results } = await db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").all();
  return results;
}

describe("applyLocalMigrations", () => {
  it("migrates empty databases as wrangler does: the same schema, the rows wrangler reads, nothing left for wrangler to apply", async () => {
    const applied = await applyLocalMigrations(fresh);
    expect(applied.DB).toEqual(sqlFiles("migrations"));
    expect(Object.keys(applied)).toEqual(d1Bindings());
    // The template was migrated by getPlatformProxy and wrangler's statements (test/node/local-d1.ts).
    for (const binding of ["DB", "SHARD_1"]) expect(await schemaOf(binding, fresh)).toEqual(await schemaOf(binding, migrated));
    const shard = await localD1("SHARD_0", fresh);
    const rows = (await shard.prepare("SELECT id, name FROM d1_migrations ORDER BY id").all<{ id: number; name: string }>()).results;
    expect(rows.map((r) => r.name)).toEqual(sqlFiles("migrations/shard"));
    expect(rows.map((r) => r.id)).toEqual(rows.map((_, i) => i + 1));
    await closeLocalD1();
    expect(await applyLocalMigrations(fresh)).toEqual({});
    expect(await pendingLocalMigrations(fresh)).toEqual({});
    // wrangler itself (one process) reads the same table and finds nothing to apply.
    const listed = await runWrangler(["d1", "migrations", "list", "SHARD_0", "--local", "--persist-to", fresh]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain("No migrations to apply");
  });
});
