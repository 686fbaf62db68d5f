/// <reference types="node" />
/**
 * The admin command line cuts SQL into statements itself (scripts/lib/split-sql.ts) now that it
 * runs local SQL in process instead of through `wrangler d1 execute --local`: it must cut as
 * wrangler does. Checked against wrangler's own cutting (readD1Migrations) on every migration
 * file, which hold triggers, comments and strings, and on the cases the commands send.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { readD1Migrations } from "@cloudflare/vitest-plugin";
import { describe, expect, it } from "vitest";
import { SqlSplitError, splitSqlStatements } from "../../scripts/lib/split-sql";
import { REPO_ROOT } from "../../scripts/lib/wrangler-config";

describe("splitSqlStatements", () => {
  it("cuts every migration file as wrangler does", async () => {
    for (const dir of ["migrations", "migrations/shard"]) {
      const wranglers = await readD1Migrations(join(REPO_ROOT, dir));
      const files = readdirSync(join(REPO_ROOT, dir)).filter((f) => f.endsWith(".sql")).sort();
      expect(wranglers.map((m) => m.name)).toEqual(files);
      for (const migration of wranglers) {
        const ours = splitSqlStatements(readFileSync(join(REPO_ROOT, dir, migration.name), "utf8"));
        // wrangler keeps a statement's trailing ";" when the file holds only one.
        expect(ours, `${dir}/${migration.name}`).toEqual(migration.queries.map((q) => q.replace(/;\s*$/, "").trim()));
      }
    }
  });

  it("keeps ; inside strings, quoted names, comments and trigger bodies", () => {
    const sql = `INSERT INTO t (a) VALUES ('x; y'), ('it''s; done');
      -- a comment; with a semicolon
      SELECT "odd;name", [other;name], \`back;tick\` FROM t /* block; comment */;
      CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET a = 'end;'; DELETE FROM u; END;
      CREATE TRIGGER IF NOT EXISTS tr2 AFTER DELETE ON t BEGIN SELECT 1; END;
      ;; -- only a comment
      SELECT 2`;
    expect(splitSqlStatements(sql)).toEqual([
      "INSERT INTO t (a) VALUES ('x; y'), ('it''s; done')",
      `-- a comment; with a semicolon
      SELECT "odd;name", [other;name], \`back;tick\` FROM t /* block; comment */`,
      "CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET a = 'end;'; DELETE FROM u; END",
      "CREATE TRIGGER IF NOT EXISTS tr2 AFTER DELETE ON t BEGIN SELECT 1; END",
      // A comment goes with the statement after it; alone, it is no statement.
      `-- only a comment
      SELECT 2`,
    ]);
  });

  it("drops one BEGIN TRANSACTION and COMMIT, as wrangler does, and refuses several transactions", () => {
    expect(splitSqlStatements("BEGIN TRANSACTION;\nINSERT INTO t VALUES (1);\nCOMMIT;")).toEqual(["INSERT INTO t VALUES (1)"]);
    expect(() => splitSqlStatements("BEGIN TRANSACTION; SELECT 1; COMMIT; BEGIN TRANSACTION; SELECT 2; COMMIT;")).toThrow(SqlSplitError);
  });
});
