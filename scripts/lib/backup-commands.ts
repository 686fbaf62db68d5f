/// <reference types="node" />
/**
 * `npm run admin -- export-shard` and `import-shard` (docs/sharding.md, "Backups"): a shard's
 * records and everything beside them, with the text index rebuilt on import. `wrangler d1
 * export` refuses a database that holds a virtual table (the text index, `records_text`), but
 * not an export of named tables: the export names every table except the index's, data only.
 * The import goes into a database migrated to the same version and holding no records: the
 * exported tables are emptied of the migrations' seed rows and the triggers set aside while the
 * rows go in (they would derive rows the file already carries, metric
 * rows and run families), then the text index is rebuilt by its catch-up (migration 0016,
 * src/text-index/backfill.ts), in chunks.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { AdminError } from "./admin-commands";
import { type D1Target, REPO_ROOT, WranglerError, d1TargetArgs, executeD1, runWrangler } from "./wrangler";

/** Tables that are not the shard's data: the index (and its FTS5 shadow tables), SQLite's, D1's. */
const NOT_EXPORTED = `name LIKE 'records\\_text%' ESCAPE '\\' OR name LIKE 'sqlite\\_%' ESCAPE '\\' OR name LIKE '\\_cf\\_%' ESCAPE '\\' OR name LIKE 'd1\\_%' ESCAPE '\\'`;

/** Rids per backfill chunk of the rebuild (each one D1 batch). */
const REBUILD_CHUNK_RIDS = 20_000;

async function rows(sql: string, target: D1Target, binding: string): Promise<Record<string, unknown>[]> {
  const results = await executeD1(sql, target, binding);
  return results[results.length - 1]?.results ?? [];
}

/** The tables an export carries: every table of the shard but the text index's and the system's. */
const EXPORTED_TABLES = `SELECT name FROM sqlite_master WHERE type = 'table' AND NOT (${NOT_EXPORTED}) ORDER BY name`;

async function exportedTables(target: D1Target, binding: string): Promise<string[]> {
  return (await rows(EXPORTED_TABLES, target, binding)).map((r) => String(r.name));
}

export async function exportShardCommand(binding: string, output: string, target: D1Target): Promise<Record<string, unknown>> {
  const tables = await exportedTables(target, binding);
  if (!tables.includes("records")) throw new AdminError(`${binding} holds no records table: not a shard (or the catalog) of this service`);
  const file = resolve(output);
  // `wrangler d1 export --local` has no --persist-to: it reads the state beside its config file,
  // so a database kept elsewhere is exported through a copy of the config whose state is it.
  const elsewhere = !target.remote && target.persistTo ? mkdtempSync(join(tmpdir(), "trace-store-export-")) : undefined;
  try {
    const where = target.remote ? ["--remote"] : ["--local"];
    if (elsewhere && !target.remote) {
      copyFileSync(join(REPO_ROOT, "wrangler.toml"), join(elsewhere, "wrangler.toml"));
      mkdirSync(join(elsewhere, ".wrangler"));
      symlinkSync(resolve(target.persistTo!), join(elsewhere, ".wrangler", "state"));
      where.push("--config", join(elsewhere, "wrangler.toml"));
    }
    const run = await runWrangler(["d1", "export", binding, ...where, "--no-schema", "--output", file, ...tables.flatMap((t) => ["--table", t])]);
    if (run.code !== 0) throw new WranglerError(`wrangler d1 export exited with code ${run.code}`, `${run.stdout}\n${run.stderr}`.trim());
  } finally {
    if (elsewhere) rmSync(elsewhere, { recursive: true, force: true });
  }
  return { shard: binding, file, tables };
}

export async function importShardCommand(binding: string, input: string, target: D1Target): Promise<Record<string, unknown>> {
  const file = resolve(input);
  if (!existsSync(file)) throw new AdminError(`no file ${file}`);
  // What the import needs to know, read in one batch.
  const [counted, triggerRows, tableRows] = await executeD1(
    `SELECT count(*) AS n FROM records; SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name; ${EXPORTED_TABLES}`,
    target,
    binding,
  );
  const n = Number(counted?.results[0]?.n ?? 0);
  if (n > 0) throw new AdminError(`${binding} already holds ${n} records: import into an empty, migrated database`);
  const triggers = triggerRows?.results ?? [];
  const drop = triggers.map((t) => `DROP TRIGGER "${String(t.name)}";`).join("\n");
  const create = triggers.map((t) => `${String(t.sql)};`).join("\n");
  // The migrations seed some state rows (the roll-up backfill's families, for one) that the file
  // carries as the source has them: the exported tables are emptied first, so the file's rows
  // are the shard's state, not a unique-key clash with the seeds.
  const tables = (tableRows?.results ?? []).map((r) => String(r.name));
  const empty = tables.map((t) => `DELETE FROM "${t}";`).join("\n");
  await executeD1(`${drop}\n${empty}`, target, binding);
  try {
    if (target.remote) {
      const run = await runWrangler(["d1", "execute", binding, ...d1TargetArgs(target), "--yes", "--file", file]);
      if (run.code !== 0) throw new WranglerError(`wrangler d1 execute --file exited with code ${run.code}`, `${run.stdout}\n${run.stderr}`.trim());
    } else {
      // Locally, what `wrangler d1 execute --local --file` does, in this process: the file's
      // statements in one batch.
      await executeD1(readFileSync(file, "utf8"), target, binding);
    }
  } finally {
    if (create) await executeD1(create, target, binding);
  }
  // The export does not carry the watermarks (records_text_backfill): the migrated database's
  // (0, 0) leaves every imported record above the index, in the tail searches read as a scan
  // would; the catch-up then indexes them chunk by chunk, each chunk one statement.
  // Each chunk and the reading of what is left (and of the records, for the report) in one call.
  let unindexed = Number.POSITIVE_INFINITY;
  let records = 0;
  let chunks = 0;
  while (unindexed > 0) {
    const answer = await rows(
      `UPDATE records_text_backfill SET indexed_through = min(indexed_through + ${REBUILD_CHUNK_RIDS}, (SELECT max(rid) FROM records)) WHERE id = 1 AND indexed_through < (SELECT max(rid) FROM records);
       SELECT coalesce((SELECT max(rid) FROM records), 0) - indexed_through AS unindexed, (SELECT count(*) FROM records) AS records FROM records_text_backfill WHERE id = 1`,
      target,
      binding,
    );
    unindexed = Number(answer[0]?.unindexed ?? 0);
    records = Number(answer[0]?.records ?? 0);
    chunks += 1;
  }
  return { shard: binding, file, records, index_rebuilt_in_chunks: chunks };
}
