/**
 * Updates of traces and spans (`PATCH`), safe against arriving before the record they update.
 *
 * Streaming clients send a record and its update concurrently: the `galileo` SDK marks a trace's
 * create as done before the request is even sent, so the trace's final update (output,
 * `is_complete: true`) regularly reaches the service first. Refusing it (404) would make the
 * SDK retry for a few seconds and then drop it; applying it to nothing would lose it. So:
 *
 * - A PATCH is written in one D1 batch that applies it to the record if the record is there
 *   (in the run the request names) and otherwise holds it in `record_patches`.
 * - Every batch that writes records ends with the same statements reading the held updates of
 *   those records instead, then deletes what it applied. D1 runs batches one at a time, so
 *   whichever of the two batches runs second sees the other's effect: nothing is lost.
 *
 * Both paths share one set of statements over a "patch source" subquery that yields rows shaped
 * like `record_patches`: from the request's JSON (direct) or from the held rows (pending).
 * Merge rules: a null or absent field leaves the record's value alone; `tags` replaces the tags;
 * `duration_ns` sets `metrics.duration_ns`; a trace's `is_complete` is copied to its spans (a
 * span's `is_complete` means "its trace is complete"). Held updates of one record merge field by
 * field, the later one winning. An update whose record never arrives expires after
 * PATCH_HOLD_MICROS.
 */
import { METRIC_COLUMN_PREFIX } from "../columns/metric-catalogue";
import type { UpdateRequest } from "./streaming-schemas";
import { normalizeDocuments, storedContent } from "./record-rows";
import { rebuildSideRows } from "./side-rows";
import { TOMBSTONE_MICROS, TOMBSTONED } from "./tombstones";

/** How long an update waits for its record: a week, far beyond any client's retry horizon (as tombstones). */
export const PATCH_HOLD_MICROS = TOMBSTONE_MICROS;

/** Held updates purged per PATCH, so that the purge never makes one request slow. */
const EXPIRY_BATCH = 100;

/** A patch as stored: one `record_patches` row without its scope columns. */
export interface PatchRow {
  record_id: string;
  record_type: "trace" | "span";
  input: string | null;
  input_is_json: 0 | 1 | null;
  output: string | null;
  output_is_json: 0 | 1 | null;
  status_code: number | null;
  tags: string | null;
  is_complete: 0 | 1 | null;
  duration_ns: number | null;
  updated_at: number;
  /** Masked copies of input and output (redaction in shadow mode, src/redaction); null otherwise. */
  redacted_input: string | null;
  redacted_output: string | null;
}

/** The stored form of an update request (pure). */
export function patchRow(recordId: string, recordType: "trace" | "span", body: UpdateRequest, nowMicros: number): PatchRow {
  const [input, inputIsJson] = storedContent(body.input);
  const [output, outputIsJson] = storedContent(body.output, normalizeDocuments);
  const isComplete = "is_complete" in body ? body.is_complete : undefined;
  return {
    record_id: recordId,
    record_type: recordType,
    input,
    input_is_json: input === null ? null : inputIsJson,
    output,
    output_is_json: output === null ? null : outputIsJson,
    status_code: body.status_code ?? null,
    // An empty list is "no tags given": it never erases tags (write-records.ts merge rules).
    tags: body.tags == null || body.tags.length === 0 ? null : JSON.stringify([...new Set(body.tags)]),
    is_complete: isComplete == null ? null : isComplete ? 1 : 0,
    duration_ns: body.duration_ns ?? null,
    updated_at: nowMicros,
    redacted_input: null,
    redacted_output: null,
  };
}

const PATCH_FIELDS = [
  "input", "input_is_json", "output", "output_is_json", "status_code", "tags", "is_complete", "duration_ns", "updated_at",
  "redacted_input", "redacted_output",
] as const satisfies readonly (keyof PatchRow)[];

/** One patch given as a JSON object in ?1, for the run in ?2 of project ?4. */
const DIRECT_SOURCE = `(SELECT ?1 ->> '$.record_id' AS record_id, ?2 AS run_id, ?4 AS project_id, ?1 ->> '$.record_type' AS record_type,
  ${PATCH_FIELDS.map((f) => `?1 ->> '$.${f}' AS ${f}`).join(", ")})`;

/**
 * The held patches of the record ids in ?1 (JSON array), for the run in ?2. Every ingest batch
 * runs this, so it is driven by the run's held updates (`record_patches_run`; the unary `+`
 * keeps the id list from driving it): held updates are transient, the run usually holds none,
 * and the statement then costs one index probe instead of one probe per record written.
 */
const PENDING_WHERE = "run_id = ?2 AND +record_id IN (SELECT value FROM json_each(?1))";

const PENDING_SOURCE = `(SELECT record_id, run_id, project_id, record_type, ${PATCH_FIELDS.join(", ")}
  FROM record_patches WHERE ${PENDING_WHERE})`;

/**
 * A patch reaches a record only in the run it was sent for, and only of its own family. The unary
 * `+` keeps SQLite from driving the lookup through the run's indexes (a scan of the whole run):
 * records are found by primary key, one probe per patch.
 */
const IN_SCOPE = "r.project_id = p.project_id AND r.id = p.record_id AND +r.run_id = p.run_id AND +r.record_type = p.record_type";

/**
 * Column ids (the catalogue's) that an applied patch can fill, with the test that it does. They
 * are listed through json_each: D1 caps the terms of a compound SELECT (UNION ALL) very low.
 */
const FILLED_BY_PATCH: [columnId: string, filled: string][] = [
  ["input", "coalesce(p.input, '') != ''"],
  ["output", "coalesce(p.output, '') != ''"],
  ["status_code", "p.status_code IS NOT NULL"],
  ["tags", "coalesce(p.tags, '[]') != '[]'"],
  ["updated_at", "1"],
  [`${METRIC_COLUMN_PREFIX}duration_ns`, "p.duration_ns IS NOT NULL"],
];

/**
 * The duration as a JSON number: held updates keep it in a REAL column, which would turn 5 into
 * 5.0; an integral duration is written as an integer whichever path the update took.
 */
const DURATION = "CASE WHEN p.duration_ns = CAST(p.duration_ns AS INTEGER) THEN CAST(p.duration_ns AS INTEGER) ELSE p.duration_ns END";

/** The patch is not older than the record (see write-records.ts: an older `updated_at` never wins). */
const NOT_OLDER = "p.updated_at >= coalesce(records.updated_at, -1)";

/** `col` takes the patch's value when it has one and is not older. */
const patched = (col: string) => `CASE WHEN p.${col} IS NOT NULL AND (records.${col} IS NULL OR ${NOT_OLDER}) THEN p.${col} ELSE records.${col} END`;
const patchedFlag = (col: string, flag: string) =>
  `CASE WHEN p.${col} IS NOT NULL AND (records.${col} IS NULL OR ${NOT_OLDER}) THEN p.${flag} ELSE records.${flag} END`;

/**
 * The statements that apply the patches of `source` to the records they reach, side rows
 * included. The merge is write-records.ts's: an absent field (or an empty tag list) never
 * erases, an older patch never overrides, `is_complete` never goes back to false.
 */
function applyStatements(source: string): string[] {
  return [
    `UPDATE records SET
       input = ${patched("input")},
       input_is_json = ${patchedFlag("input", "input_is_json")},
       output = ${patched("output")},
       output_is_json = ${patchedFlag("output", "output_is_json")},
       redacted_input = ${patched("redacted_input")},
       redacted_output = ${patched("redacted_output")},
       status_code = ${patched("status_code")},
       tags = CASE WHEN p.tags IS NOT NULL AND (records.tags = '[]' OR ${NOT_OLDER}) THEN p.tags ELSE records.tags END,
       is_complete = max(records.is_complete, coalesce(p.is_complete, 0)),
       metrics = CASE WHEN p.duration_ns IS NOT NULL AND (records.metrics ->> '$.duration_ns' IS NULL OR ${NOT_OLDER})
                 THEN json_set(records.metrics, '$.duration_ns', ${DURATION}) ELSE records.metrics END,
       updated_at = max(coalesce(records.updated_at, 0), p.updated_at)
     FROM ${source} AS p
     WHERE records.project_id = p.project_id AND records.id = p.record_id AND +records.run_id = p.run_id AND +records.record_type = p.record_type`,
    // Tag rows follow the record (metric rows follow it by triggers, migration 0009).
    ...rebuildSideRows({ from: `${source} AS p JOIN records AS r ON ${IN_SCOPE}`, where: "p.tags IS NOT NULL" }, ["record_tags"]),
    // A span is complete when its trace is.
    `UPDATE records SET is_complete = 1
     FROM ${source} AS p
     WHERE p.record_type = 'trace' AND p.is_complete = 1
       AND records.trace_id = p.record_id AND records.record_type = 'span' AND +records.run_id = p.run_id AND +records.project_id = p.project_id
       AND records.is_complete = 0
       AND EXISTS (SELECT 1 FROM records AS r WHERE ${IN_SCOPE})`,
    `INSERT OR IGNORE INTO run_columns (run_id, record_type, column_id)
     SELECT r.run_id, r.record_type, c.column_id
     FROM ${source} AS p JOIN records AS r ON ${IN_SCOPE}
     JOIN (SELECT value AS column_id FROM json_each('${JSON.stringify(FILLED_BY_PATCH.map(([id]) => id))}')) AS c
       ON CASE c.column_id ${FILLED_BY_PATCH.map(([id, test]) => `WHEN '${id}' THEN ${test}`).join(" ")} END`,
  ];
}

const APPLY_DIRECT = applyStatements(DIRECT_SOURCE);
const APPLY_PENDING = applyStatements(PENDING_SOURCE);

/**
 * Holds the patch when its record is not (yet) in the run; merges with an update already held.
 * An update of an erased record (a tombstoned id) is dropped, not held.
 */
const HOLD = `
INSERT INTO record_patches (record_id, run_id, organization_id, project_id, record_type, ${PATCH_FIELDS.join(", ")}, created_at)
SELECT p.record_id, p.run_id, ?3, p.project_id, p.record_type, ${PATCH_FIELDS.map((f) => `p.${f}`).join(", ")}, p.updated_at
FROM ${DIRECT_SOURCE} AS p
WHERE NOT EXISTS (SELECT 1 FROM records AS r WHERE ${IN_SCOPE})
  AND NOT ${TOMBSTONED("p.project_id", ["p.record_id"])}
ON CONFLICT (record_id, run_id) DO UPDATE SET
  record_type = excluded.record_type,
  input = coalesce(excluded.input, record_patches.input),
  input_is_json = CASE WHEN excluded.input IS NULL THEN record_patches.input_is_json ELSE excluded.input_is_json END,
  output = coalesce(excluded.output, record_patches.output),
  output_is_json = CASE WHEN excluded.output IS NULL THEN record_patches.output_is_json ELSE excluded.output_is_json END,
  status_code = coalesce(excluded.status_code, record_patches.status_code),
  tags = coalesce(excluded.tags, record_patches.tags),
  is_complete = CASE WHEN excluded.is_complete IS NULL THEN record_patches.is_complete
                     ELSE max(excluded.is_complete, coalesce(record_patches.is_complete, 0)) END,
  duration_ns = coalesce(excluded.duration_ns, record_patches.duration_ns),
  redacted_input = CASE WHEN excluded.input IS NULL THEN record_patches.redacted_input ELSE excluded.redacted_input END,
  redacted_output = CASE WHEN excluded.output IS NULL THEN record_patches.redacted_output ELSE excluded.redacted_output END,
  updated_at = excluded.updated_at`;

const EXPIRE = `
DELETE FROM record_patches WHERE rowid IN
  (SELECT rowid FROM record_patches WHERE created_at < ?1 ORDER BY created_at LIMIT ${EXPIRY_BATCH})`;

/**
 * After a batch, nothing stays held for its records: what applied is done, and what did not
 * (a record skipped for a tombstone, or an update sent for another family) never will.
 */
const FORGET_HELD = `DELETE FROM record_patches WHERE ${PENDING_WHERE}`;

export interface PatchScope {
  organizationId: string;
  projectId: string;
  runId: string;
}

export interface PatchStatements {
  statements: D1PreparedStatement[];
  /** Index (in `statements`) of the update of the record itself: its `changes` say whether it applied. */
  appliedAt: number;
}

/** The batch of one PATCH: apply it to the record if present, else hold it; purge expired updates. */
export function patchStatements(db: D1Database, patch: PatchRow, scope: PatchScope): PatchStatements {
  const json = JSON.stringify(patch);
  const statements = APPLY_DIRECT.map((sql) => db.prepare(sql).bind(json, scope.runId, null, scope.projectId));
  statements.push(db.prepare(HOLD).bind(json, scope.runId, scope.organizationId, scope.projectId));
  statements.push(db.prepare(EXPIRE).bind(patch.updated_at - PATCH_HOLD_MICROS));
  return { statements, appliedAt: 0 };
}

/**
 * Statements to append to any batch that writes trace or span records: they apply, then forget,
 * the updates held for those records.
 */
export function heldPatchStatements(db: D1Database, recordIds: string[], runId: string): D1PreparedStatement[] {
  if (recordIds.length === 0) return [];
  const ids = JSON.stringify(recordIds);
  return [...APPLY_PENDING, FORGET_HELD].map((sql) => db.prepare(sql).bind(ids, runId));
}
