/**
 * A run's metric_settings (contract section 15, "Where they run"): which scorers run on its
 * records, with their filters and node types, and the segment filters with their sample rates.
 * Stored whole in the catalog (evaluation_settings); read through a per-isolate cache of
 * SETTINGS_TTL_MS, so a PATCH reaches every isolate within 5 seconds (the contract's bound).
 */
import { z } from "@hono/zod-openapi";
import type { Env } from "../env";

export const SETTINGS_TTL_MS = 4_000;
export const MAX_SCORERS_PER_RUN = 50;
export const MAX_SEGMENTS = 20;

const Text = z.string().max(1000);

export const NodeNameFilter = z.strictObject({
  name: z.literal("node_name"),
  operator: z.enum(["eq", "ne", "contains", "one_of"]).default("eq"),
  value: z.union([Text, z.array(Text).max(100)]),
});
export const MetadataFilter = z.strictObject({
  name: z.literal("metadata"),
  key: z.string().min(1).max(200),
  operator: z.enum(["eq", "ne", "one_of", "not_in"]).default("eq"),
  value: z.union([Text, z.array(Text).max(100)]),
});
export const RecordFilter = z.discriminatedUnion("name", [NodeNameFilter, MetadataFilter]);
export type RecordFilter = z.output<typeof RecordFilter>;

export const SettingsBody = z
  .strictObject({
    scorers: z
      .array(
        z
          .strictObject({
            id: z.string().max(64).optional(),
            name: z.string().max(64).optional(),
            filters: z.array(RecordFilter).max(20).nullable().optional(),
            scoreable_node_types: z.array(z.string().min(1).max(64)).min(1).max(20).nullable().optional(),
          })
          .refine((s) => s.id !== undefined || s.name !== undefined, { message: "Value error, name a scorer by id or name" }),
      )
      .max(MAX_SCORERS_PER_RUN)
      .default([]),
    segment_filters: z
      .array(z.strictObject({ filter: RecordFilter.nullable().optional(), sample_rate: z.number().min(0).max(1), llm_scorers: z.boolean().default(false) }))
      .max(MAX_SEGMENTS)
      .default([]),
  })
  .openapi("MetricSettings");

export interface RunScorerSetting {
  id: string;
  filters: RecordFilter[];
  scoreable_node_types: string[] | null;
}

export interface RunSettings {
  scorers: RunScorerSetting[];
  segment_filters: { filter: RecordFilter | null; sample_rate: number; llm_scorers: boolean }[];
}

const cache = new Map<string, { settings: RunSettings | null; expiresAt: number }>();

/** The run's settings, or null when no scorer runs there. */
export async function runSettings(env: Env, runId: string, fresh = false): Promise<RunSettings | null> {
  const hit = cache.get(runId);
  if (!fresh && hit && hit.expiresAt > Date.now()) return hit.settings;
  const row = await env.DB.prepare("SELECT settings FROM evaluation_settings WHERE run_id = ?1").bind(runId).first<{ settings: string }>();
  const settings = row ? (JSON.parse(row.settings) as RunSettings) : null;
  const active = settings && settings.scorers.length > 0 ? settings : null;
  if (cache.size > 10_000) cache.clear();
  cache.set(runId, { settings: active, expiresAt: Date.now() + SETTINGS_TTL_MS });
  return active;
}

export function forgetRunSettings(runId: string): void {
  cache.delete(runId);
}
