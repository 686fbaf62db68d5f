/**
 * Where a database's bytes go: SQLite's `dbstat` virtual table (compiled into the sqlite3 shell
 * and into D1's SQLite) gives every page of the file with the table or index it belongs to, so
 * the bytes of each table and each index are the sum of their pages' sizes, free space inside
 * the pages included: what the object costs on disk, not only its payload.
 */
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { SCRATCH_DIR } from "../lib/paths";
import { queryJson, runSqlite } from "../lib/sqlite-cli";

export interface ObjectBytes {
  /** The table or index. */
  name: string;
  /** The table it belongs to (itself for a table). */
  table: string;
  kind: "table" | "index";
  /** Pages × page size. */
  bytes: number;
  /** The bytes of the rows or entries themselves (the rest is page headers and free space). */
  payload: number;
  /** Rows of a table, entries of an index. */
  entries: number;
}

export interface DatabaseBytes {
  /** The whole file (page_count × page_size). */
  fileBytes: number;
  freelistBytes: number;
  objects: ObjectBytes[];
}

/**
 * Every table and index of the file with its bytes, largest first. An automatic index (of a
 * PRIMARY KEY or UNIQUE constraint) is named as SQLite names it (`sqlite_autoindex_<table>_N`).
 */
export async function databaseBytes(file: string): Promise<DatabaseBytes> {
  const objects = await queryJson<ObjectBytes>(file, {
    sql: `SELECT s.name AS name, coalesce(m.tbl_name, s.name) AS "table", CASE WHEN m.type = 'index' THEN 'index' ELSE 'table' END AS kind,
                 sum(s.pgsize) AS bytes, sum(s.payload) AS payload,
                 -- A rowid table keeps its rows in the leaves; an index (and a WITHOUT ROWID table) on every page.
                 sum(CASE WHEN s.pagetype = 'leaf' OR (m.type = 'index' OR m.sql LIKE '%WITHOUT ROWID%') THEN s.ncell ELSE 0 END) AS entries
          FROM dbstat AS s LEFT JOIN sqlite_schema AS m ON m.name = s.name
          GROUP BY s.name ORDER BY bytes DESC, s.name`,
    params: [],
  });
  const [pages] = await queryJson<{ pageCount: number; pageSize: number; freelist: number }>(file, {
    sql: "SELECT (SELECT page_count FROM pragma_page_count) AS pageCount, (SELECT page_size FROM pragma_page_size) AS pageSize, (SELECT freelist_count FROM pragma_freelist_count) AS freelist",
    params: [],
  });
  if (!pages) throw new Error(`no page count for ${file}`);
  return { fileBytes: pages.pageCount * pages.pageSize, freelistBytes: pages.freelist * pages.pageSize, objects };
}

/** The tables whose size grows with the records: the records and their side rows. */
export const RECORD_TABLES = ["records", "record_metadata", "record_tags", "record_metrics", "metric_keys", "run_families"] as const;

/** The bytes of the record tables and all their indexes. */
export function recordBytes(db: DatabaseBytes): number {
  return db.objects.filter((o) => (RECORD_TABLES as readonly string[]).includes(o.table)).reduce((sum, o) => sum + o.bytes, 0);
}

/**
 * The bytes of the file's content with every B-tree packed: measured on a `VACUUM INTO` copy.
 * How full a B-tree's pages are depends on the order its rows arrived in (rows appended in key
 * order fill pages; rows inserted at random leave them about two thirds full), and the dataset
 * loader builds some B-trees in key order and others not, differently for each layout: the
 * packed copy compares what each layout needs, whatever order the rows arrived in.
 */
export async function packedDatabaseBytes(file: string): Promise<DatabaseBytes> {
  mkdirSync(SCRATCH_DIR, { recursive: true });
  const copy = path.join(SCRATCH_DIR, `packed-${process.pid}-${Date.now()}.sqlite`);
  try {
    await runSqlite(file, `VACUUM INTO '${copy.replace(/'/g, "''")}';\n`, { timeoutMs: 3_600_000 });
    return await databaseBytes(copy);
  } finally {
    rmSync(copy, { force: true });
  }
}
