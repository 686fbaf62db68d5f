/**
 * Scoring records of one run after their write (the evaluation queue's `score` messages): the
 * run's settings and scorers from the catalog, the records from the database of their partition
 * (the project's own shard first, through its route as every reader; the records it does not
 * hold on the other shards holding a partition of the project: contract section 13), each
 * applicable (record, scorer) computed and stored exactly once (result-writes.ts) on the shard
 * that holds the record, beside it. Presets run here; LLM judges through judge-calls.ts.
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import type { Principal } from "../http/app-env";
import { projectPartitions } from "../partitions/partition-catalog";
import { otherShardsOf } from "../partitions/read-shards";
import { projectRoute } from "../shards/project-routing";
import { shardDatabase } from "../shards/shard-config";
import { requestUpkeep } from "../upkeep/upkeep-request";
import { runPreset } from "./preset-scorers";
import { selects, type SelectableScorer } from "./record-selection";
import { resultStatements, type ScoreOutcome } from "./result-writes";
import { type RunSettings, runSettings } from "./run-settings";
import { SCORABLE_COLUMNS, type ScorableRecord } from "./scorable-record";
import type { ScorerRow, VersionDefinition } from "./scorer-store";
import { SCORER_SELECT } from "./scorer-store";

/** Records read and scored per round trip. */
export const RECORDS_PER_CHUNK = 200;

export interface ActiveScorer extends SelectableScorer {
  name: string;
  versionId: string;
  version: number;
  definition: VersionDefinition;
  dailyBudget: number;
}

/** The run's scorers that have a version, with the run's filters and node types applied. */
export async function activeScorers(env: Env, organizationId: string, settings: RunSettings): Promise<ActiveScorer[]> {
  const rows = await env.DB.prepare(`${SCORER_SELECT} WHERE s.organization_id = ?1 AND s.id IN (SELECT value FROM json_each(?2)) AND s.version_id IS NOT NULL`)
    .bind(organizationId, JSON.stringify(settings.scorers.map((s) => s.id)))
    .all<ScorerRow>();
  return rows.results.map((row) => {
    const setting = settings.scorers.find((s) => s.id === row.id)!;
    return {
      id: row.id,
      name: row.name,
      isLlm: row.v_kind === "llm",
      nodeTypes: setting.scoreable_node_types ?? (JSON.parse(row.scoreable_node_types) as string[]),
      filters: setting.filters,
      versionId: row.version_id!,
      version: row.v_version!,
      definition: JSON.parse(row.v_definition!) as VersionDefinition,
      dailyBudget: row.daily_budget,
    };
  });
}

const baseInfo = (scorer: ActiveScorer) => ({ scorer_id: scorer.id, scorer_version: scorer.version });

/** A preset's outcome on a record. */
export function presetOutcome(scorer: ActiveScorer, record: ScorableRecord): ScoreOutcome {
  const common = { recordId: record.id, recordType: record.record_type, scorerId: scorer.id, scorerName: scorer.name, versionId: scorer.versionId, runId: record.run_id };
  if (scorer.definition.kind !== "preset") throw new Error("not a preset");
  let outcome;
  try {
    outcome = runPreset(scorer.definition.preset, record);
  } catch (error) {
    const message = `the preset failed: ${error instanceof Error ? error.message : String(error)}`;
    return { ...common, status: "error", value: null, info: { status_type: "error", message, ...baseInfo(scorer) }, reason: message };
  }
  if ("skipped" in outcome) {
    return { ...common, status: "not_applicable", value: null, info: { status_type: "not_applicable", message: `not scored: ${outcome.skipped}`, ...baseInfo(scorer) }, reason: outcome.skipped };
  }
  return { ...common, status: "success", value: outcome.value, info: { status_type: "success", value: outcome.value, ...baseInfo(scorer) }, reason: null };
}

export interface ScoringContext {
  env: Env;
  organizationId: string;
  projectId: string;
  settings: RunSettings;
  scorers: ActiveScorer[];
  /** A backfill re-scores records whose result is of an older version. */
  backfill?: boolean;
}

export interface ChunkTally {
  scored: number;
  skipped: number;
  errors: number;
}

/**
 * Scores these records (already read) and stores the outcomes on the project's database. LLM
 * scorers are handed to `judge` (which stores their pending state and calls the model).
 */
export async function scoreChunk(
  ctx: ScoringContext,
  db: D1Database,
  records: ScorableRecord[],
  judge: (ctx: ScoringContext, db: D1Database, work: { scorer: ActiveScorer; record: ScorableRecord }[]) => Promise<ChunkTally>,
): Promise<ChunkTally> {
  const tally: ChunkTally = { scored: 0, skipped: 0, errors: 0 };
  const outcomes: ScoreOutcome[] = [];
  const llmWork: { scorer: ActiveScorer; record: ScorableRecord }[] = [];
  for (const record of records) {
    let any = false;
    for (const scorer of ctx.scorers) {
      if (!selects(ctx.settings, scorer, record)) continue;
      any = true;
      if (scorer.isLlm) {
        llmWork.push({ scorer, record });
        continue;
      }
      const outcome = presetOutcome(scorer, record);
      outcomes.push(outcome);
      if (outcome.status === "error") tally.errors++;
    }
    if (any) tally.scored++;
    else tally.skipped++;
  }
  if (outcomes.length > 0) await db.batch(resultStatements(db, ctx.projectId, outcomes, nowMicros(), { backfill: ctx.backfill }));
  if (llmWork.length > 0) {
    const judged = await judge(ctx, db, llmWork);
    tally.errors += judged.errors;
  }
  return tally;
}

const READ_RECORDS = `SELECT ${SCORABLE_COLUMNS} FROM records WHERE project_id = ?1 AND id IN (SELECT value FROM json_each(?2)) AND run_id = ?3`;

/** The project's database, found through its route (the catalog's shard, cached per isolate). */
export async function projectDatabase(env: Env, organizationId: string, projectId: string): Promise<{ db: D1Database; shard: string }> {
  const route = await projectRoute(env, { organizationId } as Principal, projectId);
  return { db: shardDatabase(env, route.shard), shard: route.shard };
}

export interface RecordDatabase {
  db: D1Database;
  shard: string;
}

/**
 * The databases that may hold the project's records: its own shard first, then one per other
 * shard holding a partition of it (the catalog's partitions, cached per isolate for 4 s), in the
 * order their first partition opened. A project on one shard: just its own.
 */
export async function projectRecordDatabases(env: Env, organizationId: string, projectId: string): Promise<RecordDatabase[]> {
  const [home, partitions] = await Promise.all([projectDatabase(env, organizationId, projectId), projectPartitions(env, projectId)]);
  return [home, ...otherShardsOf(partitions, home.shard).map((p) => ({ db: shardDatabase(env, p.shard), shard: p.shard }))];
}

/**
 * Reads these records of the run wherever they are stored: on the project's own shard, then the
 * ones it did not hold on the project's other partition shards, in parallel (the partitions are
 * read only then, so a project on one shard costs what it did before partitions). Each shard's
 * records, with that shard's database.
 */
export async function readRecordsAnywhere(env: Env, home: RecordDatabase, projectId: string, runId: string, ids: string[]): Promise<{ at: RecordDatabase; records: ScorableRecord[] }[]> {
  const found = (await home.db.prepare(READ_RECORDS).bind(projectId, JSON.stringify(ids), runId).all<ScorableRecord>()).results;
  const answers = [{ at: home, records: found }];
  if (found.length === ids.length) return answers;
  const others = otherShardsOf(await projectPartitions(env, projectId), home.shard);
  if (others.length === 0) return answers;
  const held = new Set(found.map((r) => r.id));
  const missing = JSON.stringify(ids.filter((id) => !held.has(id)));
  const more = await Promise.all(
    others.map(async (p) => {
      const at = { db: shardDatabase(env, p.shard), shard: p.shard };
      return { at, records: (await at.db.prepare(READ_RECORDS).bind(projectId, missing, runId).all<ScorableRecord>()).results };
    }),
  );
  return [...answers, ...more];
}

/** Handles one `score` message: the records of one run written just now. */
export async function scoreWrittenRecords(
  env: Env,
  message: { organizationId: string; projectId: string; runId: string; recordIds: string[] },
  judge: Parameters<typeof scoreChunk>[3],
): Promise<void> {
  const settings = await runSettings(env, message.runId);
  if (!settings) return;
  const scorers = await activeScorers(env, message.organizationId, settings);
  if (scorers.length === 0) return;
  const home = await projectDatabase(env, message.organizationId, message.projectId);
  const ctx: ScoringContext = { env, organizationId: message.organizationId, projectId: message.projectId, settings, scorers };
  const wrote = new Set<string>();
  for (let i = 0; i < message.recordIds.length; i += RECORDS_PER_CHUNK) {
    const ids = message.recordIds.slice(i, i + RECORDS_PER_CHUNK);
    for (const { at, records } of await readRecordsAnywhere(env, home, message.projectId, message.runId, ids)) {
      if (records.length === 0) continue;
      // Each shard's results are written on it, beside their records.
      const tally = await scoreChunk(ctx, at.db, records, judge);
      if (tally.scored > 0) wrote.add(at.shard);
    }
  }
  // The metric cells (metrics/search, the dashboard) catch up like after any write.
  if (env.UPKEEP_AFTER_WRITES === "false") return;
  for (const shard of wrote) {
    await requestUpkeep(env, shard).catch((error) => console.error(`evaluations: could not request the upkeep of ${shard}: ${error instanceof Error ? error.message : String(error)}`));
  }
}
