/// <reference types="node" />
/**
 * How many data shards a deployment needs for a stated ingest rate and retention (issue 32, item
 * 5; docs/deploying.md, "How many shards"), and the change to wrangler.toml that binds them.
 *
 * A project's records spread over time partitions on every shard (docs/partitions.md), so what
 * fills the shards is the whole deployment's retained data: spans per day x retention days x
 * bytes per span. A shard takes new partitions up to SHARD_HIGH_WATER_BYTES (8 of D1's 10 GB);
 * the shards needed are that total over the mark, rounded up, plus one spare: the spare is where
 * the open partitions roll while the hourly expiry frees the others, and the target a move
 * needs. Never fewer than two (a project can roll away from a full shard only if there is
 * another). Bytes per span: the ingest bench's realistic payload stored, indexes and text index
 * included (docs/benchmarks.md, "The bill": 2,668 bytes); pass your own when your spans are
 * bigger (a span with long prompts and outputs can be ten times that).
 *
 * Shards are only ever added: a shard that holds partitions must stay bound, so a smaller
 * answer leaves wrangler.toml as it is.
 */

/**
 * D1 bindings one Worker may have (about 5,000; adding one is a deploy): a load that needs more
 * shards than this cannot be served by one deployment of this Worker.
 */
export const MAX_SHARD_BINDINGS = 5_000;

/** Bytes stored per span of the ingest bench's realistic payload (docs/benchmarks.md, "The bill"). */
export const DEFAULT_BYTES_PER_SPAN = 2_668;

export interface ShardSizingInput {
  spansPerDay: number;
  retentionDays: number;
  bytesPerSpan: number;
  highWaterBytes: number;
}

export interface ShardSizing extends ShardSizingInput {
  /** The retained data at steady state, in bytes. */
  retainedBytes: number;
  /** Shards filled to their high-water mark by the retained data. */
  filled: number;
  /** What to bind: filled + 1 spare, at least 2. */
  shards: number;
}

export class SizingError extends Error {
  override name = "SizingError";
}

function positive(value: number, what: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new SizingError(`${what} must be a positive number, got ${String(value)}`);
  return value;
}

export function shardsFor(input: ShardSizingInput): ShardSizing {
  const retainedBytes = positive(input.spansPerDay, "--spans-per-day") * positive(input.retentionDays, "--retention-days") * positive(input.bytesPerSpan, "--bytes-per-span");
  const filled = Math.ceil(retainedBytes / positive(input.highWaterBytes, "SHARD_HIGH_WATER_BYTES"));
  return { ...input, retainedBytes, filled, shards: Math.max(2, filled + 1) };
}

/** The data shards wrangler.toml's DATA_SHARDS names, in order. */
export function dataShardsOf(toml: string): string[] {
  const line = /^DATA_SHARDS\s*=\s*"([^"]*)"/m.exec(toml);
  if (!line) throw new SizingError('wrangler.toml has no DATA_SHARDS = "..." line in [vars]');
  return line[1]!
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
}

/**
 * wrangler.toml binding `shards` data shards: the missing ones (SHARD_<n> after the highest bound,
 * database trace-store-shard-<n>, the shard migrations, a placeholder id unique to it, as the
 * bound ones have, since `npm start` keys its local databases by id) added after the last
 * `[[d1_databases]]` block, and DATA_SHARDS naming them all. Returns the text unchanged when it
 * binds as many already, and the names added.
 */
export function withDataShards(toml: string, shards: number): { toml: string; added: string[] } {
  if (shards > MAX_SHARD_BINDINGS) {
    throw new SizingError(`that load needs ${shards.toLocaleString("en-US")} data shards, more than the about ${MAX_SHARD_BINDINGS.toLocaleString("en-US")} D1 bindings a Worker may have: shorten the retention, or keep fewer bytes per span`);
  }
  const bound = dataShardsOf(toml);
  if (bound.length >= shards) return { toml, added: [] };
  const numbers = bound.map((name) => /^SHARD_(\d+)$/.exec(name)).map((m) => (m ? Number(m[1]) : -1));
  let next = Math.max(-1, ...numbers) + 1;
  const added: string[] = [];
  const blocks: string[] = [];
  while (bound.length + added.length < shards) {
    const binding = `SHARD_${next}`;
    if (new RegExp(`^binding\\s*=\\s*"${binding}"`, "m").test(toml)) throw new SizingError(`wrangler.toml binds ${binding} but DATA_SHARDS does not name it: name it there, or remove the binding, then run again`);
    // Placeholder ids 00000000-0000-0000-0000-0000000000NN, NN = 10 + n, as SHARD_0 and SHARD_1.
    const id = `00000000-0000-0000-0000-${String(10 + next).padStart(12, "0")}`;
    blocks.push(`[[d1_databases]]\nbinding = "${binding}"\ndatabase_name = "trace-store-shard-${next}"\ndatabase_id = "${id}"\nmigrations_dir = "migrations/shard"\n`);
    added.push(binding);
    next++;
  }
  // After the last [[d1_databases]] block: each block runs to the next line that opens a table.
  const starts = [...toml.matchAll(/^\[\[d1_databases\]\]/gm)].map((m) => m.index!);
  if (starts.length === 0) throw new SizingError("wrangler.toml has no [[d1_databases]] block");
  const bodyStart = toml.indexOf("\n", starts[starts.length - 1]!) + 1;
  const after = /^\[/m.exec(toml.slice(bodyStart));
  const at = after ? bodyStart + after.index : toml.length;
  const head = toml.slice(0, at).replace(/\n*$/, "\n\n");
  const grown = `${head}${blocks.join("\n")}\n${toml.slice(at)}`;
  return { toml: grown.replace(/^DATA_SHARDS\s*=\s*"[^"]*"/m, `DATA_SHARDS = "${[...bound, ...added].join(",")}"`), added };
}

/** The sizing options of `npm run provision` as given (strings), checked; undefined when none is given. */
export function sizingRequestOf(options: { spansPerDay?: string; retentionDays?: string; bytesPerSpan?: string; plan?: boolean }): { spansPerDay: number; retentionDays: number; bytesPerSpan: number } | undefined {
  const { spansPerDay, retentionDays, bytesPerSpan, plan } = options;
  if (spansPerDay === undefined && retentionDays === undefined) {
    if (plan || bytesPerSpan !== undefined) throw new SizingError("--plan and --bytes-per-span need --spans-per-day and --retention-days");
    return undefined;
  }
  if (spansPerDay === undefined || retentionDays === undefined) throw new SizingError("give both --spans-per-day and --retention-days");
  const request = { spansPerDay: Number(spansPerDay), retentionDays: Number(retentionDays), bytesPerSpan: Number(bytesPerSpan ?? DEFAULT_BYTES_PER_SPAN) };
  // Checked here, before anything runs (shardsFor checks them again where it computes).
  shardsFor({ ...request, highWaterBytes: 1 });
  return request;
}

/** A table of shards needed by spans per day and retention days, for the docs and `--plan`. */
export function sizingTable(highWaterBytes: number, bytesPerSpan = DEFAULT_BYTES_PER_SPAN): string {
  const rates = [100_000, 1_000_000, 10_000_000, 100_000_000];
  const retentions = [7, 30, 90, 365];
  const head = `| spans per day | ${retentions.map((d) => `${d} days`).join(" | ")} |\n|---|${retentions.map(() => "---:").join("|")}|`;
  const rows = rates.map((rate) => `| ${rate.toLocaleString("en-US")} | ${retentions.map((days) => String(shardsFor({ spansPerDay: rate, retentionDays: days, bytesPerSpan, highWaterBytes }).shards)).join(" | ")} |`);
  return [head, ...rows].join("\n");
}
