/// <reference types="node" />
/**
 * `npm start` runs `wrangler d1 migrations apply` (a process of about 4 CPU s per database) only
 * when a local database lacks a migration, which it reads in process
 * (scripts/lib/local-migrations.ts): what it reads must be what wrangler would apply.
 * test/node/start-demo.test.ts runs npm start on an empty directory (all pending, wrangler
 * applies them) and again on the same one (nothing pending).
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeLocalD1, localD1 } from "../../scripts/lib/local-d1";
import { pendingLocalMigrations } from "../../scripts/lib/local-migrations";
import { REPO_ROOT, d1Bindings } from "../../scripts/lib/wrangler-config";
import { migratedStateDir } from "./migrated-state";

const sqlFiles = (dir: string) => readdirSync(join(REPO_ROOT, dir)).filter((f) => f.endsWith(".sql")).sort();

let migrated: string;
let empty: string;

beforeAll(async () => {
  migrated = await migratedStateDir("trace-store-pending-");
  empty = mkdtempSync(join(tmpdir(), "trace-store-empty-"));
}, 300_000);

afterAll(async () => {
  await closeLocalD1();
  for (const dir of [migrated, empty]) if (dir) rmSync(dir, { recursive: true, force: true });
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
