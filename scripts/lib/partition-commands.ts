/// <reference types="node" />
/**
 * `npm run admin -- roll-partition --project <id>` (docs/partitions.md, contract section 13):
 * closes the project's open partition and opens a new one, placed like a new project on the
 * configured shard (DATA_SHARDS of wrangler.toml) with the most room below its high-water mark,
 * as the catalog last recorded the sizes (the worker records them as it writes and every hour).
 * Where PARTITION_ROLLING is "off" the new partition stays on the open one's shard (the operator
 * chose to keep each project on one database). Prints `{project_id, closed, opened, shard}`. The worker's isolates send new roots to the new
 * partition within 5 seconds; the first write into it registers it on its shard.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Statement, renderSql } from "../../src/admin/provisioning";
import { rollContextStatements, rollStatements } from "../../src/partitions/partition-requests";
import { pickShard } from "../../src/shards/placement";
import { AdminError } from "./admin-commands";
import { type D1Target, REPO_ROOT, executeD1 } from "./wrangler";

type Row = Record<string, unknown>;

async function run(statements: Statement[], target: D1Target): Promise<Row[][]> {
  const results = await executeD1(renderSql(statements), target);
  return results.map((r) => r.results ?? []);
}

/** A [vars] value of wrangler.toml (the configuration the service runs with). */
function configVar(name: string): string | undefined {
  const toml = readFileSync(join(REPO_ROOT, "wrangler.toml"), "utf8");
  return new RegExp(`^${name}\\s*=\\s*"([^"]*)"`, "m").exec(toml)?.[1];
}

export async function rollPartitionCommand(projectId: string, target: D1Target) {
  const [project, partitions, excluded, sizes, openCounts] = await run(rollContextStatements(projectId), target);
  if (!project || project.length === 0) throw new AdminError(`project ${projectId} not found`);
  const open = (partitions ?? []).find((p) => p.state === "open");
  if (!open) throw new AdminError(`project ${projectId} has no open partition yet (the service gives it one with its next request): nothing changed`);
  const names = (configVar("DATA_SHARDS") ?? "DB").split(",").map((s) => s.trim()).filter(Boolean);
  const highWater = Number(configVar("SHARD_HIGH_WATER_BYTES") ?? 8e9);
  const skip = new Set((excluded ?? []).map((r) => String(r.shard)));
  const size = new Map((sizes ?? []).map((r) => [String(r.name), Number(r.size_bytes)]));
  const opens = new Map((openCounts ?? []).map((r) => [String(r.shard), Number(r.open)]));
  // Where PARTITION_ROLLING is "off" (the worker's default is on: src/partitions/partition-config.ts)
  // the operator keeps each project on one database: the new partition stays on the open one's
  // shard, or nothing changes.
  const rolling = (configVar("PARTITION_ROLLING") ?? "on").trim().toLowerCase() !== "off";
  const candidates = rolling ? names : names.filter((n) => n === String(open.shard));
  const shard = pickShard(
    candidates.filter((n) => !skip.has(n)).map((name) => ({ name, sizeBytes: size.get(name) ?? 0, projects: opens.get(name) ?? 0 })),
    highWater,
  );
  if (!shard && !rolling) {
    throw new AdminError(`the open partition's shard ${String(open.shard)} is at its high-water mark, and PARTITION_ROLLING is "off", which keeps the project on that shard: nothing changed`);
  }
  if (!shard) throw new AdminError(`no data shard can take a new partition (every one of ${names.join(", ")} is at its high-water mark, or was left by a move of this project): nothing changed`);
  const opened = crypto.randomUUID();
  const results = await run(rollStatements({ projectId, openId: String(open.id), newId: opened, shard, nowMicros: Date.now() * 1000 }), target);
  const after = results[results.length - 1] ?? [];
  if (!after.some((p) => p.id === opened && p.state === "open")) {
    throw new AdminError(`the project's partition rolled meanwhile (by the service): nothing changed by this command; see GET /v2/projects/${projectId}/usage`);
  }
  return { project_id: projectId, closed: String(open.id), opened, shard };
}
