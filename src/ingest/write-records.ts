/**
 * Writes a RecordBatch in one D1 `batch` (atomic: all of it or none of it). Rows travel as JSON
 * arrays in one bound parameter per statement (`json_each(?)`), so a request of thousands of
 * records never comes near D1's 100-parameter limit; parameters are cut at MAX_PARAM_BYTES of
 * UTF-8 (not UTF-16 units: CJK text is three bytes a character) to stay under D1's 2 MB value
 * limit.
 *
 * Writes are upserts keyed by (project, client id), and they merge (docs/schema.md, "Merging a
 * record written twice"), so a create re-delivered after its update never rolls the update back:
 * - a field the incoming write leaves empty (null, no tags, no name) never erases a stored value;
 * - where both have a value, the incoming one wins unless it is older: its `updated_at` (absent
 *   counts as older than any stored one) is before the stored `updated_at`;
 * - `user_metadata`, `metrics` and `metric_info` merge key by key under the same rule;
 * - `is_complete` and `has_children` never go back to false; `updated_at` keeps the latest;
 * - `created_at` is fixed by the record's first write.
 * The side rows (metadata, tags) are then rebuilt from the merged record, so they always equal
 * its JSON whatever order writes arrive in; the metric rows follow it by triggers (migration
 * 0009). The `records_ownership_guard` trigger aborts the batch if an id belongs to another run
 * or family of the project.
 *
 * Records erased by a deletion job leave tombstones (src/ingest/tombstones.ts): a record whose
 * id, trace, session or parent is tombstoned in its project is not written.
 */
import { RequestValidationError } from "../http/errors";
import type { RunWithProject } from "../projects/run-access";
import { copyRunStatement, registerProjectStatement } from "../shards/shard-membership";
import { RECORD_COLUMNS, type RecordBatch } from "./record-rows";
import { derivedAwareMerge } from "./derived-metrics";
import { RECORD_LIMITS, utf8Bytes } from "./record-limits";
import { rebuildSideRows } from "./side-rows";
import { TOMBSTONED } from "./tombstones";
import { PARENT_CHAIN_REFUSAL, parentChainError, parentChainStatement, refuseWhileImportingStatement } from "./write-guards";

const MAX_PARAM_BYTES = 1_000_000;

/** JSON arrays of the given encoded elements, each array at most MAX_PARAM_BYTES of UTF-8. */
export function jsonArraysBySize(encoded: readonly string[]): string[] {
  const chunks: string[] = [];
  let current: string[] = [];
  let size = 2;
  for (const json of encoded) {
    const bytes = utf8Bytes(json);
    if (current.length > 0 && size + bytes + 1 > MAX_PARAM_BYTES) {
      chunks.push(`[${current.join(",")}]`);
      current = [];
      size = 2;
    }
    current.push(json);
    size += bytes + 1;
  }
  if (current.length > 0) chunks.push(`[${current.join(",")}]`);
  return chunks;
}

const column = (name: (typeof RECORD_COLUMNS)[number]) => `record ->> ${RECORD_COLUMNS.indexOf(name)}`;

/** The incoming write is not older than the stored record (see the header). */
const NOT_OLDER = "coalesce(excluded.updated_at, -1) >= coalesce(records.updated_at, -1)";

/** `col` takes the incoming value when it has one and is not older; `empty` is the stored form of "no value". */
const mergeValue = (col: string, empty: string | null = null) => {
  const hasValue = empty === null ? `excluded.${col} IS NOT NULL` : `excluded.${col} IS NOT ${empty}`;
  const storedEmpty = empty === null ? `records.${col} IS NULL` : `records.${col} IS ${empty}`;
  return `CASE WHEN ${hasValue} AND (${storedEmpty} OR ${NOT_OLDER}) THEN excluded.${col} ELSE records.${col} END`;
};

/** A JSON object merged key by key, the newer side's keys winning. */
const mergeObject = (col: string) =>
  `CASE WHEN excluded.${col} IS NULL THEN records.${col} WHEN records.${col} IS NULL THEN excluded.${col}
        WHEN ${NOT_OLDER} THEN json_patch(records.${col}, excluded.${col}) ELSE json_patch(excluded.${col}, records.${col}) END`;

const DERIVED_MERGE = derivedAwareMerge(mergeObject("metrics"), NOT_OLDER);

/** How each updatable column merges; the rest take `mergeValue(col)`. */
const MERGE: Partial<Record<(typeof RECORD_COLUMNS)[number], string>> = {
  // Ownership: the guard trigger aborts if any of these would change.
  organization_id: "excluded.organization_id",
  project_id: "excluded.project_id",
  run_id: "excluded.run_id",
  record_type: "excluded.record_type",
  // When a record started is fixed by its first write: a client that leaves it out gets the
  // server's clock, which a later copy must not move.
  created_at: "records.created_at",
  // So is its partition: its root's, chosen by the first write (docs/partitions.md).
  partition_seq: "records.partition_seq",
  name: mergeValue("name", "''"),
  // "default" is what an agent span without a type gets: it never replaces a type a client gave.
  agent_type: mergeValue("agent_type", "'default'"),
  tags: mergeValue("tags", "'[]'"),
  // A structured input or output keeps its flag: both move together.
  input_is_json: `CASE WHEN excluded.input IS NOT NULL AND (records.input IS NULL OR ${NOT_OLDER}) THEN excluded.input_is_json ELSE records.input_is_json END`,
  output_is_json: `CASE WHEN excluded.output IS NOT NULL AND (records.output IS NULL OR ${NOT_OLDER}) THEN excluded.output_is_json ELSE records.output_is_json END`,
  user_metadata: mergeObject("user_metadata"),
  // Cost and tokens the service derived give way to the client's (derived-metrics.ts).
  metrics: DERIVED_MERGE.metrics,
  derived_metrics: DERIVED_MERGE.derivedMetrics,
  metric_info: mergeObject("metric_info"),
  is_complete: "max(records.is_complete, excluded.is_complete)",
  updated_at: "CASE WHEN records.updated_at IS NULL THEN excluded.updated_at ELSE max(records.updated_at, coalesce(excluded.updated_at, 0)) END",
};

const UPDATABLE = RECORD_COLUMNS.filter((c) => c !== "id");

// Each record is a JSON array of its ~46 column values. `json_each` renders an element's text
// anew every time its `value` is read, so extracting the columns straight from it renders each
// ~1 KB row 46 times; the materialized CTE renders each row once and the extractions read that
// copy. Measured in workerd on the 1,100 records of one benchmark request: 61 ms -> 19 ms.
// `+child.run_id`: the run check must not lure the planner onto a run index (a scan of the run
// per row); the parent index finds the few children, the run is checked on them.
/**
 * A new record's partition (docs/partitions.md): its root's when the root is stored here (a
 * session's traces and a trace's spans follow it whatever their time; null is the first
 * partition); else its trace's, when the session it names was never stored (the trace was then
 * its own root: without this a late span of it took the open partition, apart from its trace);
 * else the batch's (the open partition, for new roots). coalesce stops at the first answer, so
 * the trace's probe costs only records whose root is not stored. A stored record keeps its own
 * (MERGE). A root written in the same statement is not seen, and needs not be: it is new, so it
 * takes the batch's partition too.
 */
const PARTITION_OF_NEW = `coalesce(
  (SELECT coalesce(root.partition_seq, 1) FROM records AS root
   WHERE root.project_id = ${column("project_id")} AND root.id = coalesce(${column("session_id")}, ${column("trace_id")}, ${column("id")})),
  (SELECT coalesce(trace.partition_seq, 1) FROM records AS trace
   WHERE trace.project_id = ${column("project_id")} AND trace.id = ${column("trace_id")}),
  ${column("partition_seq")})`;

const UPSERT_RECORDS = `
WITH incoming AS MATERIALIZED (SELECT value AS record FROM json_each(?1))
INSERT INTO records (${RECORD_COLUMNS.join(", ")}, has_children, family_key)
SELECT ${RECORD_COLUMNS.map((c) => (c === "partition_seq" ? PARTITION_OF_NEW : column(c))).join(", ")},
       EXISTS (SELECT 1 FROM records AS child WHERE child.parent_id = ${column("id")} AND +child.run_id = ${column("run_id")}),
       (SELECT f.key FROM run_families AS f WHERE f.run_id = ${column("run_id")} AND f.record_type = ${column("record_type")})
FROM incoming
WHERE NOT ${TOMBSTONED(column("project_id"), [column("id"), column("trace_id"), column("session_id"), column("parent_id")])}
ON CONFLICT (project_id, id) DO UPDATE SET ${UPDATABLE.map((c) => `${c} = ${MERGE[c] ?? mergeValue(c)}`).join(",\n  ")},
  has_children = max(records.has_children, excluded.has_children)`;

/** The batch's records (ids in ?1) as stored, in project ?2: their side rows are rebuilt from them. */
const REBUILD_SIDE_ROWS = rebuildSideRows({ from: "records AS r", where: "r.project_id = ?2 AND r.id IN (SELECT value FROM json_each(?1))" }, [
  "record_metadata",
  "record_tags",
]);

/**
 * Parents named by the batch's records get has_children, if a child of theirs was written (a
 * child skipped for a tombstone marks nothing). A parent is only ever in the child's own run.
 */
const MARK_PARENTS = `
UPDATE records SET has_children = 1
WHERE project_id = ?3 AND id IN (SELECT value FROM json_each(?1)) AND has_children = 0 AND +run_id = ?2
  AND EXISTS (SELECT 1 FROM records AS c WHERE c.parent_id = records.id AND +c.run_id = records.run_id)`;

const RECORD_PRESENT_COLUMNS = `
INSERT OR IGNORE INTO run_columns (run_id, record_type, column_id)
SELECT ?2, value ->> 0, value ->> 1 FROM json_each(?1)`;

/** Prices of models whose spans still wait for their token counts (RecordBatch.pendingPrices), newest write's price kept. */
const PENDING_PRICES = `
INSERT INTO span_model_prices (organization_id, model, input_price, output_price)
SELECT ?2, value ->> 0, value ->> 1, value ->> 2 FROM json_each(?1) WHERE true
ON CONFLICT (organization_id, model) DO UPDATE SET input_price = excluded.input_price, output_price = excluded.output_price`;

export interface WriteScope {
  organizationId: string;
  projectId: string;
  runId: string;
}

/**
 * The statements that write a batch, in dependency order (records before their side rows). A
 * client's batch is refused (422) if a parent_id would make a loop or a chain deeper than
 * MAX_CHAIN_DEPTH (write-guards.ts); a move's copy (`copy: true`) writes the records as they
 * were, so that data stored before the rule still moves.
 */
export function recordWriteStatements(db: D1Database, batch: RecordBatch, scope: WriteScope, options: { copy?: boolean } = {}): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  // Before the records: a merge that completes a span's model and token counts prices it (trigger records_cost_when_known).
  if (batch.pendingPrices && batch.pendingPrices.length > 0) {
    statements.push(db.prepare(PENDING_PRICES).bind(JSON.stringify(batch.pendingPrices), scope.organizationId));
  }
  for (const chunk of jsonArraysBySize(batch.encoded)) {
    statements.push(db.prepare(UPSERT_RECORDS).bind(chunk));
  }
  const parentCheck = options.copy ? null : parentChainStatement(db, batch, scope.projectId);
  if (parentCheck) statements.push(parentCheck);
  for (const ids of jsonArraysBySize(batch.records.map((r) => JSON.stringify(r.id)))) {
    for (const sql of REBUILD_SIDE_ROWS) statements.push(db.prepare(sql).bind(ids, scope.projectId));
  }
  if (batch.parentIds.length > 0) {
    statements.push(db.prepare(MARK_PARENTS).bind(JSON.stringify(batch.parentIds), scope.runId, scope.projectId));
  }
  if (batch.presentColumns.length > 0) {
    statements.push(db.prepare(RECORD_PRESENT_COLUMNS).bind(JSON.stringify(batch.presentColumns), scope.runId));
  }
  return statements;
}

/**
 * Runs a batch that writes records, turning the database's refusals that are the client's
 * doing into answers: the run's cap on distinct metric names (trigger
 * `run_columns_metric_name_limit`) is a 422. (An id of another run is a 409: src/http/errors.ts.)
 */
export async function runWriteBatch(db: D1Database, statements: D1PreparedStatement[]): Promise<D1Result[]> {
  try {
    return await db.batch(statements);
  } catch (error) {
    const text = `${String(error)} ${String((error as { cause?: unknown })?.cause ?? "")}`;
    if (text.includes(PARENT_CHAIN_REFUSAL)) throw parentChainError();
    if (!text.includes("run_metric_name_limit")) throw error;
    const msg = `Value error, this request would give the run more than ${RECORD_LIMITS.maxMetricNamesPerRun} distinct metric names (each stays a column of the run); nothing of it was written`;
    throw new RequestValidationError([
      { loc: ["body"], msg, type: "value_error", ctx: { error: msg.replace("Value error, ", ""), max: RECORD_LIMITS.maxMetricNamesPerRun } },
    ]);
  }
}

/**
 * The head of every batch that writes records on a shard: the refusal of a copy a move is still
 * filling (write-guards.ts), the project's registration and the run's copy there, idempotent, so that a copy lost between the catalog's write and the shard's
 * heals with the next write (src/shards/shard-membership.ts).
 */
export function shardMembershipStatements(db: D1Database, run: RunWithProject): D1PreparedStatement[] {
  return [refuseWhileImportingStatement(db, run.projectId), registerProjectStatement(db, { projectId: run.projectId, organizationId: run.copy.organizationId }), copyRunStatement(db, run.copy)];
}
