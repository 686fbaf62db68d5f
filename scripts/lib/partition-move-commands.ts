/// <reference types="node" />
/**
 * `npm run admin -- move-partition --project <id> --partition <id|seq> --to <shard>`
 * (docs/sharding.md, "Moving a partition"; contract section 13): asks the worker, through the
 * catalog as move-project does (src/moves/move-requests.ts), to move one closed partition of a
 * project online; the move queue runs it (src/moves/partition-move.ts). Everything the request
 * could be refused for is checked here first, with the reason, and nothing is written: an unknown
 * project or partition, the open partition, a target that is not a database of wrangler.toml, the
 * partition's own shard, a shard holding the project's home or another of its partitions (and a
 * source that does), a target past its high-water mark, a move of the project already under way.
 * Run again on a paused move of the same partition to the same target, it resumes it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { partitionMoveRefusal } from "../../src/moves/partition-move";
import { moveStatusStatement, openMoveStatement, partitionMoveContextStatements, requestPartitionMoveStatement, resumeMoveStatement } from "../../src/moves/move-requests";
import { renderSql } from "../../src/admin/provisioning";
import { AdminError } from "./admin-commands";
import { moveReport, poke, rows, waitUntilOver } from "./move-commands";
import { type D1Target, REPO_ROOT, d1Bindings, executeD1 } from "./wrangler";

type Row = Record<string, unknown>;

export interface MovePartitionOptions {
  projectId: string;
  /** The partition's id (a UUID) or its sequence number in the project (1, 2, ...). */
  partition: string;
  to: string;
  url: string;
  wait: boolean;
  timeoutSeconds: number;
}

/** A [vars] value of wrangler.toml (the configuration the service runs with). */
function configVar(name: string): string | undefined {
  const toml = readFileSync(join(REPO_ROOT, "wrangler.toml"), "utf8");
  return new RegExp(`^${name}\\s*=\\s*"([^"]*)"`, "m").exec(toml)?.[1];
}

const SEQ = /^[1-9][0-9]{0,8}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `--partition` is well formed (a usage error otherwise, before any database is read). */
export function isPartitionRef(value: string): boolean {
  return SEQ.test(value) || UUID.test(value);
}

export async function movePartitionCommand(options: MovePartitionOptions, target: D1Target) {
  const bindings = d1Bindings();
  if (!bindings.includes(options.to)) {
    throw new AdminError(`unknown shard ${JSON.stringify(options.to)}: the databases of wrangler.toml are ${bindings.join(", ")}`);
  }
  const [projects, partitions, sizes] = (await executeD1(renderSql(partitionMoveContextStatements(options.projectId)), target)).map((r) => (r.results ?? []) as Row[]);
  const project = projects?.[0];
  if (!project) throw new AdminError(`project ${options.projectId} not found: nothing changed`);
  const list = (partitions ?? []).map((p) => ({ id: String(p.id), seq: Number(p.seq), shard: String(p.shard), state: p.state as "open" | "closed" }));
  const partition = SEQ.test(options.partition) ? list.find((p) => p.seq === Number(options.partition)) : list.find((p) => p.id === options.partition.toLowerCase());
  if (!partition) {
    throw new AdminError(
      `project ${options.projectId} has no partition ${options.partition} (its partitions: ${list.map((p) => `${p.seq} ${p.id} on ${p.shard}, ${p.state}`).join("; ") || "none yet"}): nothing changed`,
    );
  }

  const [open] = await rows(openMoveStatement(options.projectId), target);
  if (open) {
    const same = open.partition_id === partition.id && open.target === options.to;
    if (open.status !== "paused" || !same) {
      const what = open.partition_id ? `its partition ${open.partition_id}` : "the whole project";
      throw new AdminError(
        `project ${options.projectId} already has a ${open.status === "paused" ? "paused " : ""}move of ${what} (move ${open.id}, ${open.source} -> ${open.target}, ${open.phase}); one move per project at a time: see npm run admin -- move-status --project ${options.projectId}; nothing changed`,
      );
    }
    await rows(resumeMoveStatement(String(open.id)), target);
    return started(String(open.id), true, options, target);
  }

  const refusal = partitionMoveRefusal({ projectId: options.projectId, home: String(project.shard), partitions: list, partition, target: options.to });
  if (refusal) throw new AdminError(`${refusal}: nothing changed`);
  const highWater = Number(configVar("SHARD_HIGH_WATER_BYTES") ?? 8e9);
  const size = Number((sizes ?? []).find((s) => s.name === options.to)?.size_bytes ?? 0);
  if (size >= highWater) {
    throw new AdminError(`${options.to} is at its high-water mark (${size} of ${highWater} bytes, as the catalog last recorded it: npm run admin -- shards): it takes no new partition; nothing changed`);
  }
  const moveId = crypto.randomUUID();
  let inserted: Row[];
  try {
    inserted = await rows(requestPartitionMoveStatement({ moveId, projectId: options.projectId, partitionId: partition.id, target: options.to, nowMicros: Date.now() * 1000 }), target);
  } catch (error) {
    if (/UNIQUE constraint failed: project_moves/.test(String(error))) throw new AdminError(`project ${options.projectId} is already moving: see move-status; nothing changed`);
    throw error;
  }
  if (inserted.length !== 1) throw new AdminError(`the move was not created (the partition changed meanwhile?): see GET /v2/projects/${options.projectId}/usage; nothing changed`);
  return started(moveId, false, options, target);
}

async function started(moveId: string, resumed: boolean, options: MovePartitionOptions, target: D1Target) {
  const how = target.remote ? "the deployed worker's minutely cron starts it" : await poke(options.url);
  const row = options.wait ? await waitUntilOver(moveId, target, options.timeoutSeconds, target.remote ? undefined : () => poke(options.url)) : (await rows(moveStatusStatement({ moveId }), target))[0]!;
  return { ...moveReport(row), resumed, started: how };
}
