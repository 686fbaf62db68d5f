/// <reference types="node" />
/**
 * `npm run provision` (docs/deploying.md): creates on Cloudflare everything wrangler.toml binds,
 * writes a deploy-only config with the real database ids, migrates the databases and sets the
 * token secret. Safe to run again at any time: what exists is kept (a database, queue or bucket
 * that "already exists" is fine, the secret is never replaced), so it is also how an operator
 * picks up a binding added to wrangler.toml later (a shard, a bucket).
 *
 * The resources are read from wrangler.toml itself (through wrangler's own config reader), never
 * listed here: D1 databases, queues (producers, consumers and their dead-letter queues) and R2
 * buckets. wrangler.toml keeps its placeholder ids, because `npm start` keys its local databases
 * by `database_id`; the real ones go into the git-ignored DEPLOY_CONFIG, a copy of wrangler.toml
 * that differs only in those ids, which `npm run deploy` and the `--remote` operator commands use.
 *
 * Wrangler is the one on PATH (`npm run` puts the project's own first), so a test can stand a
 * fake in for it.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { unstable_readConfig } from "wrangler";
// The deploy-only config lives beside wrangler.toml, so its relative paths stay valid.
import { DEPLOY_CONFIG, REPO_ROOT, wranglerEnv } from "./wrangler";
import { type ShardSizing, dataShardsOf, shardsFor, withDataShards } from "./shard-sizing";

/** The secret the worker signs its bearer tokens with (src/auth). */
export const TOKEN_SECRET = "TOKEN_SECRET";

export interface Resources {
  d1Databases: { binding: string; name: string }[];
  queues: string[];
  buckets: string[];
}

/** What `configPath` binds: the resources that must exist before `wrangler deploy`. */
export function boundResources(configPath = join(REPO_ROOT, "wrangler.toml")): Resources {
  const config = unstable_readConfig({ config: configPath });
  const queues = new Set<string>();
  for (const producer of config.queues.producers ?? []) queues.add(producer.queue);
  for (const consumer of config.queues.consumers ?? []) {
    queues.add(consumer.queue);
    if (consumer.dead_letter_queue) queues.add(consumer.dead_letter_queue);
  }
  const d1: { binding: string; database_name?: string }[] = config.d1_databases;
  const r2: { bucket_name?: string }[] = config.r2_buckets;
  return {
    d1Databases: d1.map((d) => ({ binding: d.binding, name: d.database_name ?? d.binding })),
    queues: [...queues],
    buckets: [...new Set(r2.flatMap((b) => (b.bucket_name ? [b.bucket_name] : [])))],
  };
}

/**
 * wrangler.toml with each `[[d1_databases]]` block's `database_id` replaced by the id of its
 * `database_name` (text kept otherwise, comments included, so the copy reads like the original).
 */
export function deployConfigText(toml: string, idsByName: ReadonlyMap<string, string>): string {
  const blocks = toml.split(/^(?=\[)/m);
  return blocks
    .map((block) => {
      if (!block.startsWith("[[d1_databases]]")) return block;
      const name = /^database_name\s*=\s*"([^"]+)"/m.exec(block)?.[1];
      const id = name === undefined ? undefined : idsByName.get(name);
      if (id === undefined) throw new Error(`no database id for the [[d1_databases]] block of ${name ?? "(no database_name)"}`);
      return block.replace(/^database_id\s*=\s*"[^"]*"/m, `database_id = "${id}"`);
    })
    .join("");
}

interface Run {
  code: number | null;
  output: string;
  stdout: string;
}

function wrangler(args: string[], input?: string): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn("wrangler", args, { cwd: REPO_ROOT, env: wranglerEnv(), stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    let stdout = "";
    let output = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => ((stdout += chunk), (output += chunk)));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolvePromise({ code, output, stdout }));
    if (input !== undefined) child.stdin!.end(input);
  });
}

export class ProvisionError extends Error {
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(message);
    this.name = "ProvisionError";
  }
}

async function mustSucceed(args: string[], input?: string): Promise<Run> {
  const run = await wrangler(args, input);
  if (run.code !== 0) throw new ProvisionError(`wrangler ${args.join(" ")} exited with code ${run.code}`, run.output.trim());
  return run;
}

/**
 * What Cloudflare answers when the resource is there already: D1 (code 7502), Queues (11009),
 * R2 (10004). Anything else (no login, a quota) stops the provisioning.
 */
const ALREADY_EXISTS = /already exists|already taken|\[code: (7502|11009|10004)\]/i;

/** Runs a `create`; true if it created, false if the resource existed already. */
async function create(args: string[]): Promise<boolean> {
  const run = await wrangler(args);
  if (run.code === 0) return true;
  if (ALREADY_EXISTS.test(run.output)) return false;
  throw new ProvisionError(`wrangler ${args.join(" ")} exited with code ${run.code}`, run.output.trim());
}

export interface ProvisionReport {
  /** With --spans-per-day and --retention-days: what they need, and the shards added to wrangler.toml for it. */
  sizing?: SizingReport;
  created: string[];
  existing: string[];
  databaseIds: Record<string, string>;
  migrated: string[];
  secret: "set" | "kept";
  config: string;
}

export interface SizingRequest {
  spansPerDay: number;
  retentionDays: number;
  bytesPerSpan: number;
}

export interface SizingReport {
  spans_per_day: number;
  retention_days: number;
  bytes_per_span: number;
  retained_bytes: number;
  high_water_bytes: number;
  shards_needed: number;
  /** The data shards DATA_SHARDS names before the run. */
  shards_bound: string[];
  /** Bound by this run (added to wrangler.toml); empty when there were enough. */
  added: string[];
}

/** SHARD_HIGH_WATER_BYTES of wrangler.toml's [vars]. */
function highWaterBytes(configPath: string): number {
  const vars = unstable_readConfig({ config: configPath }).vars as Record<string, unknown>;
  return Number(vars.SHARD_HIGH_WATER_BYTES ?? 8_000_000_000);
}

/**
 * The shards a stated ingest rate and retention need (scripts/lib/shard-sizing.ts); unless `plan`,
 * the missing ones are added to `configPath` (wrangler.toml: the operator commits the change, and
 * every later run, deploy and `npm start` binds them), before anything is created.
 */
export function sizeShards(request: SizingRequest, plan: boolean, configPath = join(REPO_ROOT, "wrangler.toml")): SizingReport {
  const toml = readFileSync(configPath, "utf8");
  const sizing: ShardSizing = shardsFor({ ...request, highWaterBytes: highWaterBytes(configPath) });
  const bound = dataShardsOf(toml);
  const grown = withDataShards(toml, sizing.shards);
  if (!plan && grown.added.length > 0) writeFileSync(configPath, grown.toml);
  return {
    spans_per_day: sizing.spansPerDay,
    retention_days: sizing.retentionDays,
    bytes_per_span: sizing.bytesPerSpan,
    retained_bytes: sizing.retainedBytes,
    high_water_bytes: sizing.highWaterBytes,
    shards_needed: sizing.shards,
    shards_bound: bound,
    added: grown.added,
  };
}

export async function provision(options: { log?: (line: string) => void; configName?: string; sizing?: SizingRequest } = {}): Promise<ProvisionReport> {
  const log = options.log ?? (() => undefined);
  const configName = options.configName ?? DEPLOY_CONFIG;
  let sizing: SizingReport | undefined;
  if (options.sizing) {
    sizing = sizeShards(options.sizing, false);
    const gb = (sizing.retained_bytes / 1e9).toFixed(1);
    log(
      sizing.added.length > 0
        ? `${gb} GB retained needs ${sizing.shards_needed} data shards: added ${sizing.added.join(", ")} to wrangler.toml (commit it)`
        : `${gb} GB retained needs ${sizing.shards_needed} data shards: wrangler.toml binds ${sizing.shards_bound.length}, enough`,
    );
  }
  const resources = boundResources();
  const created: string[] = [];
  const existing: string[] = [];
  const note = (kind: string, name: string, isNew: boolean) => {
    (isNew ? created : existing).push(`${kind} ${name}`);
    log(`${isNew ? "created" : "exists "} ${kind} ${name}`);
  };

  for (const { name } of resources.d1Databases) note("d1", name, await create(["d1", "create", name]));
  for (const queue of resources.queues) note("queue", queue, await create(["queues", "create", queue]));
  for (const bucket of resources.buckets) note("r2", bucket, await create(["r2", "bucket", "create", bucket]));

  // The ids of new and existing databases alike, from one listing.
  const listed = JSON.parse((await mustSucceed(["d1", "list", "--json"])).stdout) as { uuid: string; name: string }[];
  const idsByName = new Map(listed.map((d) => [d.name, d.uuid]));
  const toml = readFileSync(join(REPO_ROOT, "wrangler.toml"), "utf8");
  writeFileSync(join(REPO_ROOT, configName), `# Written by \`npm run provision\` from wrangler.toml, with the real database ids. Do not edit:\n# change wrangler.toml and run it again.\n${deployConfigText(toml, idsByName)}`);
  log(`wrote ${configName}`);

  const migrated: string[] = [];
  for (const { binding } of resources.d1Databases) {
    await mustSucceed(["d1", "migrations", "apply", binding, "--remote", "--config", configName]);
    migrated.push(binding);
    log(`migrated ${binding}`);
  }

  // A new secret would sign out every user and invalidate every token: set it once only.
  const listing = await wrangler(["secret", "list", "--format", "json", "--config", configName]);
  const workerIsNew = listing.code !== 0 && /not found/i.test(listing.output);
  if (listing.code !== 0 && !workerIsNew) throw new ProvisionError(`wrangler secret list exited with code ${listing.code}`, listing.output.trim());
  const secrets = workerIsNew ? [] : (JSON.parse(listing.stdout) as { name: string }[]);
  let secret: ProvisionReport["secret"] = "kept";
  if (!secrets.some((s) => s.name === TOKEN_SECRET)) {
    await mustSucceed(["secret", "put", TOKEN_SECRET, "--config", configName], randomBytes(48).toString("base64"));
    secret = "set";
  }
  log(`${secret === "set" ? "set" : "kept"} secret ${TOKEN_SECRET}`);

  return {
    ...(sizing ? { sizing } : {}),
    created,
    existing,
    databaseIds: Object.fromEntries(resources.d1Databases.map(({ name }) => [name, idsByName.get(name)!])),
    migrated,
    secret,
    config: configName,
  };
}
