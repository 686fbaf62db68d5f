/**
 * Writes a planned run into a SQLite file with the service's own ingestion code: the traces go
 * through `traceRows` and the sessions through `sessionRows` (src/ingest/record-rows.ts), and the
 * rows are written by the very statements `recordWriteStatements` (src/ingest/write-records.ts)
 * gives D1 for an ingest request, bound with the same parameters. So the records, their
 * metadata, tag and metric rows, `has_children` and `run_columns` are exactly what ingesting the
 * same traces through POST /v2/projects/{pid}/traces would leave behind.
 *
 * Speed (measured, see docs/benchmarks.md): the statements run in one sqlite3 shell, in one
 * transaction, with the journal and fsync off (the file is a throw-away until the load is
 * complete), and the indexes that only serve queries are dropped during the load and rebuilt
 * after it from their own `CREATE INDEX` text, which sorts once instead of updating eight
 * B-trees at random per row. The indexes the write statements themselves use stay. The
 * requests are built on a worker thread (fast-generator.ts) while the shell runs the previous
 * ones.
 */
import type { IngestContext, RecordBatch } from "../../src/ingest/record-rows";
import { mergeBatches } from "../../src/ingest/merge-batches";
import { sessionRows, traceRows } from "../../src/ingest/record-rows";
import { recordWriteStatements } from "../../src/ingest/write-records";
import type { IngestTrace } from "../../src/ingest/ingest-schemas";
import { boundStatement, queryJson, runSqlite, type SqlStatement, SqliteWriter } from "../lib/sqlite-cli";
import { type RunPlan, sessionInput, traceInput, WINDOW_END_MICROS } from "./synthetic-traces";
import { defaultPriceOf } from "../../src/pricing/price-lookup";

/** Traces per ingest request, as an SDK flush of a busy application would send them. */
export const TRACES_PER_REQUEST = 100;

/**
 * Indexes the write statements read: the upsert's conflict target (which must exist: it is
 * UNIQUE), the `has_children` lookup, and the trace's llm spans and the session's traces that
 * the roll-up triggers sum (migration 0013): dropped, each insert's roll-up would read the whole
 * table, and a load would take time quadratic in its size. (Side-row deletes use the side
 * tables' primary keys.)
 */
const INDEXES_USED_BY_WRITES = new Set(["records_project_record_id", "records_parent", "records_trace", "records_session"]);

export interface RunScope {
  organizationId: string;
  projectId: string;
  runId: string;
}

/** The statements an ingest request would send to D1, captured instead of executed. */
export function ingestStatements(batch: RecordBatch, scope: RunScope): SqlStatement[] {
  const capture = { prepare: (sql: string) => ({ bind: (...params: unknown[]) => ({ sql, params }) }) };
  return recordWriteStatements(capture as unknown as D1Database, batch, scope) as unknown as SqlStatement[];
}

export function ingestContext(scope: RunScope, sessionId: string | null = null, partitionSeq = 1): IngestContext {
  // Every generated record carries its own created_at; the clock is the dataset's own (its
  // window's end), so that the refusal of dates more than 24 h ahead (record-rows.ts) sees the
  // records as the past they are. Costs come from the built-in prices, as for an organization
  // without overrides.
  // The dataset goes into the project's first partition unless told otherwise (docs/partitions.md).
  return { ...scope, sessionId, isComplete: null, nowMicros: WINDOW_END_MICROS, partitionSeq, prices: defaultPriceOf };
}

/**
 * The run as a sequence of ingest requests, in creation order: each request carries up to
 * TRACES_PER_REQUEST traces, preceded by the sessions they open.
 */
export function* ingestRequests(plan: RunPlan, seed: number, scope: RunScope): Generator<RecordBatch> {
  const ctx = ingestContext(scope);
  for (let start = 0; start < plan.traces.length; start += TRACES_PER_REQUEST) {
    const planned = plan.traces.slice(start, start + TRACES_PER_REQUEST);
    const sessions: RecordBatch[] = [];
    const traces: IngestTrace[] = [];
    for (const trace of planned) {
      const session = plan.sessions[trace.session]!;
      if (session.firstTrace === trace.index) sessions.push(sessionRows(sessionInput(seed, session), ctx));
      traces.push(traceInput(seed, trace, session));
    }
    yield mergeBatches([...sessions, traceRows(traces, ctx)]);
  }
}

interface IndexDefinition {
  name: string;
  sql: string;
}

async function queryOnlyIndexes(file: string): Promise<IndexDefinition[]> {
  const rows = await queryJson<IndexDefinition>(file, {
    sql: "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ('records', 'record_metadata', 'record_tags', 'record_metrics') ORDER BY name",
    params: [],
  });
  return rows.filter((index) => !INDEXES_USED_BY_WRITES.has(index.name));
}

export interface WriteRunResult {
  records: number;
  seconds: number;
}

/** One ingest request as shell input: its statements with their parameters bound. */
export interface RequestSql {
  sql: string;
  records: number;
}

export function requestSql(batch: RecordBatch, scope: RunScope): RequestSql {
  return { sql: ingestStatements(batch, scope).map(boundStatement).join(""), records: batch.records.length };
}

/** The run's requests as shell input, built on this thread. */
export function* requestsSql(plan: RunPlan, seed: number, scope: RunScope): Generator<RequestSql> {
  for (const batch of ingestRequests(plan, seed, scope)) yield requestSql(batch, scope);
}

/** Writes every request of the run; `prefix` runs first in the same transaction (the tenant). */
export async function writeRun(
  file: string,
  requests: Iterable<RequestSql> | AsyncIterable<RequestSql>,
  prefix: SqlStatement[],
  onProgress?: (records: number) => void,
): Promise<WriteRunResult> {
  const started = Date.now();
  const [{ journal_mode: journalMode } = { journal_mode: "wal" }] = await queryJson<{ journal_mode: string }>(file, { sql: "PRAGMA journal_mode", params: [] });
  const indexes = await queryOnlyIndexes(file);
  const writer = new SqliteWriter(file);
  await writer.write(
    [
      "PRAGMA journal_mode = OFF;",
      "PRAGMA synchronous = OFF;",
      "PRAGMA cache_size = -1000000;",
      // Before `.parameter init`: changing temp_store drops every temp table.
      "PRAGMA temp_store = MEMORY;",
      // Worker threads for the sorts that rebuild the indexes at the end.
      "PRAGMA threads = 2;",
      "PRAGMA foreign_keys = ON;",
      ".parameter init",
      "BEGIN;",
      ...indexes.map((index) => `DROP INDEX "${index.name}";`),
      "",
    ].join("\n"),
  );
  for (const statement of prefix) await writer.write(boundStatement(statement));
  let records = 0;
  for await (const request of requests) {
    await writer.write(request.sql);
    records += request.records;
    onProgress?.(records);
  }
  await writer.write([...indexes.map((index) => `${index.sql};`), "COMMIT;", `PRAGMA journal_mode = ${journalMode};`, ""].join("\n"));
  await writer.close();
  return { records, seconds: (Date.now() - started) / 1000 };
}

/** Row counts per record type, to check a load. */
export async function recordCounts(file: string, runId: string): Promise<Record<string, number>> {
  const rows = await queryJson<{ record_type: string; n: number }>(file, {
    sql: "SELECT record_type, count(*) AS n FROM records WHERE run_id = ?1 GROUP BY record_type",
    params: [runId],
  });
  return Object.fromEntries(rows.map((row) => [row.record_type, row.n]));
}

export async function checkpoint(file: string): Promise<void> {
  await runSqlite(file, "PRAGMA wal_checkpoint(TRUNCATE);\n");
}
