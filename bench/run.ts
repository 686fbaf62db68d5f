/**
 * `npm run bench [-- <bench>] [options]`: the benchmarks of issues 3, 4, 5, 9, 10, 11, 12, 20 and 22,
 * and of the trace explorer's render target.
 *
 *   npm run bench                      search (issue 3) at 100,000 and 1,000,000 records
 *   npm run bench -- deletion          deletion by metadata through the queue (issue 4), 1M records
 *   npm run bench -- ingest            ingestion throughput (issue 5)
 *   npm run bench -- otlp              OpenTelemetry intake (OTLP protobuf) against native ingestion (issue 12)
 *   npm run bench -- load              two organizations, one abusive, against wrangler dev (issue 9)
 *   npm run bench -- shards            scale-out: sharded against one database, isolation, capacity, moves (issue 10)
 *   npm run bench -- partitions        the search bench's records in 4 partitions over 2 shards against one partition (issue 32):
 *                                      every search shape, counts, metrics, export rate, ingest, a late child two partitions back;
 *                                      --size records (default 1,000,000)
 *   npm run bench -- storage           bytes per record, per table and index, before/after the storage
 *                                      migration, with search and ingestion against both (issue 11)
 *   npm run bench -- annotations       rating writes against one-span ingestion, and a 100,000-record
 *                                      annotation queue add under a search loop (issue 20), 1M records
 *   npm run bench -- export            streamed export (jsonl_flat) against the sqlite3 shell: rate, workerd's
 *                                      peak memory, D1 queries and CPU per 1,000 records (issue 22), 100k and 1M
 *   npm run bench -- redaction         ingest with every redaction detector on against off (target 0.85×), and masking CPU on 1 MB adversarial texts (issue 33)
 *   npm run bench -- alerts            --size due alert rules (default 1,000) of 100 projects evaluated by one cron run and its evaluation batches:
 *                                      metrics reads per rule, workerd CPU per rule against a cron run with none due,
 *                                      and the time from the cron's call to each alert.firing's delivery (issue 35)
 *   npm run bench -- evaluations       ingest with five presets on against none (target 0.9×), the presets' lag from write to
 *                                      score (p95 ≤ 10 s), and an LLM judge's calls per 60 s against its integration's
 *                                      requests per minute (issue 34); --seconds: how long the judge is watched (150)
 *   npm run bench -- ui                the trace explorer's first render of a 100-row table after the API's answer
 *                                      in headless Chromium, against a plain HTML table of the same cells (target 100 ms)
 *   npm run bench -- upkeep            derived data under ingest (issue 29): S1, S8 and A1 every --sample seconds
 *                                      while ingesting for --seconds (default 600), ingest against a baseline
 *                                      without the upkeep and against the text index kept in the write itself
 *                                      (--clients writers, default 2), then a bulk import of --size records
 *                                      (default 1,000,000) and the time until S8 and A1 are back within target
 *   npm run bench -- all               search, deletion, ingest, otlp, load and shards, one after the other
 *   npm run bench -- dataset           only generate (or find in the cache) the datasets
 *   npm run bench -- verify            check that the generator writes exactly what ingestion does
 *
 * Options: --sizes 100000,1000000 (search, export, dataset), --size 1000000 (deletion, annotations; verify: 2000), --seed 1,
 * --shapes first-page,tag (search, storage), --seconds 75 (load: each phase), --port 8890 (load: the
 * server's loopback port, the inspector's next to it), --baseline <git ref>, --bytes-only and --ingest-only (storage;
 * its --size defaults to 100000), --sample 30 and --clients 2 (upkeep), --quick (few samples: to try the harness, not for figures).
 * Results: a markdown table on the console and in bench/results/<bench>.md. Method and figures:
 * docs/benchmarks.md.
 */
import { runAlertsBench } from "./alerts/alerts-bench";
import { runAnnotationsBench } from "./annotations/annotations-bench";
import { ensureDataset } from "./dataset/dataset-cache";
import { verifyDataset } from "./dataset/verify-dataset";
import { runDeletionBench } from "./deletion/deletion-bench";
import { runExportBench } from "./export/export-bench";
import { runIngestBench } from "./ingest/ingest-bench";
import { runRedactionBench } from "./redaction/redaction-bench";
import { runEvaluationsBench } from "./evaluations/evaluations-bench";
import { runLoadBench } from "./load/load-bench";
import { runOtlpBench } from "./otlp/otlp-bench";
import { ensureSqlite3 } from "./lib/sqlite-cli";
import { installCleanupHandlers, stopAllDevServers } from "./lib/wrangler-dev";
import { runSearchBench } from "./search/search-bench";
import { runShardsBench } from "./shards/shards-bench";
import { runPartitionsBench } from "./partitions/partitions-bench";
import { runStorageBench } from "./storage/storage-bench";
import { runUiBench } from "./ui/ui-bench";
import { runUpkeepBench } from "./upkeep/upkeep-bench";
import { closeLocalD1 } from "../scripts/lib/local-d1";

const BENCHES = ["search", "deletion", "annotations", "alerts", "ingest", "otlp", "load", "shards", "partitions", "storage", "export", "redaction", "evaluations", "ui", "upkeep", "all", "dataset", "verify"] as const;
type Bench = (typeof BENCHES)[number];

interface Options {
  bench: Bench;
  sizes: number[];
  size: number;
  /** --size was given (the storage bench's default size differs from the deletion bench's). */
  sizeGiven: boolean;
  seed: number;
  baseline?: string;
  bytesOnly: boolean;
  ingestOnly: boolean;
  quick: boolean;
  shapes: string[];
  seconds: number | undefined;
  port: number | undefined;
  sample: number;
  clients: number | undefined;
}

function positiveInteger(text: string, flag: string): number {
  const value = Number(text.replace(/_/g, ""));
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${flag}: expected a positive integer, got ${text}`);
  return value;
}

const DEFAULT_SIZE = 1_000_000;
const STORAGE_DEFAULT_SIZE = 100_000;

function parseArguments(argv: string[]): Options {
  const options: Options = { bench: "search", sizes: [100_000, DEFAULT_SIZE], size: DEFAULT_SIZE, sizeGiven: false, seed: 1, bytesOnly: false, ingestOnly: false, quick: false, shapes: [], seconds: undefined, port: undefined, sample: 30, clients: undefined };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    const value = () => {
      const next = argv[i + 1];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      i += 1;
      return next;
    };
    if ((BENCHES as readonly string[]).includes(arg)) options.bench = arg as Bench;
    else if (arg === "--sizes") options.sizes = value().split(",").map((s) => positiveInteger(s, "--sizes"));
    else if (arg === "--size") {
      options.size = positiveInteger(value(), "--size");
      options.sizeGiven = true;
    } else if (arg === "--baseline") options.baseline = value();
    else if (arg === "--bytes-only") options.bytesOnly = true;
    else if (arg === "--ingest-only") options.ingestOnly = true;
    else if (arg === "--seed") options.seed = positiveInteger(value(), "--seed");
    else if (arg === "--shapes") options.shapes = value().split(",").filter(Boolean);
    else if (arg === "--quick") options.quick = true;
    else if (arg === "--seconds") options.seconds = positiveInteger(value(), "--seconds");
    else if (arg === "--port") options.port = positiveInteger(value(), "--port");
    else if (arg === "--sample") options.sample = positiveInteger(value(), "--sample");
    else if (arg === "--clients") options.clients = positiveInteger(value(), "--clients");
    else throw new Error(`unknown argument ${arg}; benches: ${BENCHES.join(", ")}; options: --sizes, --size, --seed, --shapes, --seconds, --port, --baseline, --bytes-only, --ingest-only, --quick`);
  }
  return options;
}

async function main(): Promise<void> {
  const options = parseArguments(process.argv.slice(2));
  installCleanupHandlers();
  ensureSqlite3();
  const started = Date.now();
  const { bench } = options;
  if (bench === "dataset") {
    for (const size of options.sizes) await ensureDataset(size, options.seed);
  }
  if (bench === "verify") await verifyDataset(options.size === DEFAULT_SIZE ? 2_000 : options.size, options.seed);
  if (bench === "search" || bench === "all") await runSearchBench(options);
  if (bench === "deletion" || bench === "all") await runDeletionBench({ size: options.size, seed: options.seed, quick: options.quick });
  if (bench === "annotations") await runAnnotationsBench({ size: options.size, seed: options.seed, quick: options.quick });
  if (bench === "ingest" || bench === "all") await runIngestBench({ quick: options.quick });
  if (bench === "redaction") await runRedactionBench({ quick: options.quick });
  if (bench === "evaluations") await runEvaluationsBench({ quick: options.quick, seconds: options.seconds });
  if (bench === "alerts") await runAlertsBench({ quick: options.quick, rules: options.sizeGiven ? options.size : 1_000 });
  if (bench === "otlp" || bench === "all") await runOtlpBench({ quick: options.quick });
  if (bench === "load" || bench === "all") await runLoadBench({ quick: options.quick, seed: options.seed, seconds: options.seconds, port: options.port });
  if (bench === "shards" || bench === "all") await runShardsBench({ quick: options.quick });
  if (bench === "partitions") await runPartitionsBench({ size: options.size, seed: options.seed, quick: options.quick });
  if (bench === "export") await runExportBench({ sizes: options.sizes, seed: options.seed, quick: options.quick });
  if (bench === "ui") await runUiBench({ quick: options.quick });
  if (bench === "upkeep") await runUpkeepBench({ seconds: options.seconds ?? 600, sampleSeconds: options.sample, bulkRecords: options.sizeGiven ? options.size : DEFAULT_SIZE, clients: options.clients ?? 2, quick: options.quick });
  if (bench === "storage") {
    // 100,000 records by default: each side generates its own dataset, and at 1,000,000 that is
    // about 3 GB and several minutes per side; the bytes per record hardly move with the size.
    const size = options.sizeGiven ? options.size : STORAGE_DEFAULT_SIZE;
    await runStorageBench({ size, seed: options.seed, baseline: options.baseline, quick: options.quick, shapes: options.shapes, bytesOnly: options.bytesOnly, ingestOnly: options.ingestOnly });
  }
  console.log(`\nbench ${bench} finished in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

main()
  .catch(async (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error);
    await stopAllDevServers();
    process.exitCode = 1;
  })
  // The local databases the benches read in process (scripts/lib/local-d1.ts) keep a workerd open.
  .finally(() => closeLocalD1());
