/**
 * Scorers and their versions in the catalog (migration 0026) and their answers (contract
 * section 15). A scorer's counts by status and its last error come from its results on every
 * database that holds records (evaluation_results_scorer_status), so `GET` says why records are
 * pending or in error without reading a record.
 */
import { microsToIso } from "../db/client";
import type { Env } from "../env";
import { allRecordDatabases, shardDatabase } from "../shards/shard-config";
import type { PresetDefinition } from "./preset-definitions";

export const OUTPUT_TYPES = ["boolean", "categorical", "count", "discrete", "percentage"] as const;
export type OutputType = (typeof OUTPUT_TYPES)[number];

export interface LlmDefinition {
  instructions: string;
  user_prompt: string;
  model_name: string;
  num_judges: number;
  cot_enabled: boolean;
  output_type: OutputType;
  categories: string[] | null;
  /** The integration that serves the model (`custom` or `openai`). */
  integration: "custom" | "openai";
}

export type VersionDefinition = { kind: "preset"; preset: PresetDefinition } | { kind: "llm"; llm: LlmDefinition };

export interface ScorerRow {
  id: string;
  organization_id: string;
  name: string;
  scorer_type: "llm" | "preset";
  description: string | null;
  tags: string;
  output_type: OutputType;
  scoreable_node_types: string;
  daily_budget: number;
  version_id: string | null;
  created_at: number;
  updated_at: number;
  /** The current version (a join of the reads). */
  v_version: number | null;
  v_kind: "llm" | "preset" | null;
  v_definition: string | null;
  v_created_at: number | null;
}

export const SCORER_SELECT = `SELECT s.id, s.organization_id, s.name, s.scorer_type, s.description, s.tags, s.output_type, s.scoreable_node_types, s.daily_budget, s.version_id, s.created_at, s.updated_at,
  v.version AS v_version, v.kind AS v_kind, v.definition AS v_definition, v.created_at AS v_created_at
FROM scorers AS s LEFT JOIN scorer_versions AS v ON v.id = s.version_id`;

export interface VersionRow {
  id: string;
  scorer_id: string;
  version: number;
  kind: "llm" | "preset";
  definition: string;
  created_at: number;
}

export function versionAnswer(row: VersionRow) {
  const definition = JSON.parse(row.definition) as VersionDefinition;
  return {
    id: row.id,
    scorer_id: row.scorer_id,
    version: row.version,
    created_at: microsToIso(row.created_at),
    ...(definition.kind === "preset" ? { preset: { name: definition.preset.preset, params: definition.preset.params } } : { llm: definition.llm }),
  };
}

export function scorerAnswer(row: ScorerRow) {
  return {
    id: row.id,
    name: row.name,
    scorer_type: row.scorer_type,
    description: row.description,
    tags: JSON.parse(row.tags) as string[],
    output_type: row.output_type,
    scoreable_node_types: JSON.parse(row.scoreable_node_types) as string[],
    daily_budget: row.daily_budget,
    created_at: microsToIso(row.created_at),
    updated_at: microsToIso(row.updated_at),
    latest_version:
      row.version_id && row.v_version !== null
        ? versionAnswer({ id: row.version_id, scorer_id: row.id, version: row.v_version, kind: row.v_kind!, definition: row.v_definition!, created_at: row.v_created_at! })
        : null,
  };
}

export async function scorerById(env: Env, organizationId: string, id: string): Promise<ScorerRow | null> {
  return env.DB.prepare(`${SCORER_SELECT} WHERE s.id = ?1 AND s.organization_id = ?2`).bind(id, organizationId).first<ScorerRow>();
}

export interface ScorerHealth {
  counts: { pending: number; success: number; error: number };
  last_error: { message: string; record_id: string; at: string } | null;
  /**
   * False when a record database could not be read (down, or a shard listed in DATA_SHARDS
   * before its migrations were applied: "no such table"): the counts and last error are then
   * those of the others, and `counts_message` says how many were left out. Never a 500: the
   * page that says why a scorer is stuck must answer most when something is wrong.
   */
  counts_complete: boolean;
  counts_message?: string;
}

/** Counts by status and the last error of a scorer's results, over every database that holds records. */
export async function scorerHealth(env: Env, scorerId: string): Promise<ScorerHealth> {
  const counts = { pending: 0, success: 0, error: 0 };
  let last: { message: string; record_id: string; updated_at: number } | null = null;
  const databases = allRecordDatabases(env);
  const unread: string[] = [];
  await Promise.all(
    databases.map(async (shard) => {
      try {
        const db = shardDatabase(env, shard);
        const [byStatus, lastError] = await db.batch<{ status: string; n: number; reason: string | null; record_id: string; updated_at: number }>([
          db.prepare("SELECT status, count(*) AS n FROM evaluation_results WHERE scorer_id = ?1 GROUP BY status").bind(scorerId),
          db.prepare("SELECT reason, record_id, updated_at FROM evaluation_results WHERE scorer_id = ?1 AND status = 'error' ORDER BY updated_at DESC LIMIT 1").bind(scorerId),
        ]);
        for (const row of byStatus!.results) if (row.status in counts) counts[row.status as keyof typeof counts] += row.n;
        const e = lastError!.results[0];
        if (e && (!last || e.updated_at > last.updated_at)) last = { message: e.reason ?? "error", record_id: e.record_id, updated_at: e.updated_at };
      } catch (error) {
        unread.push(shard);
        console.error(`evaluations: the counts of scorer ${scorerId} on ${shard} could not be read: ${error instanceof Error ? error.message : String(error)}`);
      }
    }),
  );
  const found = last as { message: string; record_id: string; updated_at: number } | null;
  return {
    counts,
    last_error: found ? { message: found.message, record_id: found.record_id, at: microsToIso(found.updated_at) } : null,
    counts_complete: unread.length === 0,
    ...(unread.length > 0 ? { counts_message: `${unread.length} of ${databases.length} record databases could not be read (the worker's log says why): these counts leave them out` } : {}),
  };
}
