/**
 * The storage benchmark (issue 11, "Storage per record"): the bytes one record costs, per table
 * and per index, before and after the storage migration, on the search benchmark's dataset; and
 * in the same run, against both schemas, the search benchmark's endpoint p50 per shape and the
 * ingestion benchmark's throughput, so that it shows what the smaller layout costs in speed.
 *
 * "Before" is the service at an earlier commit (by default the parent of the commit that added
 * the storage migration, bench/storage/baseline-tree.ts), "after" this checkout. Each side's own
 * bench code generates its dataset (its own migrations, its own write statements) and runs its
 * own search and ingestion benches, as child processes one after the other, so the two sides
 * never compete for the machine's cores; the bytes are read with SQLite's `dbstat`
 * (database-bytes.ts) from each dataset's D1 file.
 */
import { spawnSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { markdownTable, runConditions } from "../lib/markdown-report";
import { finishReport } from "../lib/finish-report";
import { DATA_DIR, REPO_ROOT } from "../lib/paths";
import { count, ratio } from "../lib/stats";
import { baselineTree, defaultBaselineRef } from "./baseline-tree";
import { childReport, datasetFileOf, markdownRows, parseFigure, runChildBench } from "./child-bench";
import { type DatabaseBytes, databaseBytes, packedDatabaseBytes, RECORD_TABLES, recordBytes } from "./database-bytes";

export interface StorageBenchOptions {
  /** Records in the dataset. */
  size: number;
  seed: number;
  /** A git ref for "before" (default: the parent of the commit that added the storage migration). */
  baseline?: string;
  quick: boolean;
  /** Only these search shapes (all when empty). */
  shapes: string[];
  /** Bytes only: no search or ingestion benches. */
  bytesOnly: boolean;
  /**
   * Ingestion only, no dataset: each side's ingestion bench (into new databases) twice, the sides
   * alternating, held to the round's rule (at least 0.8 × the baseline's throughput).
   */
  ingestOnly: boolean;
}

/** This round's rule for ingestion against its starting commit (--ingest-only). */
const ROUND_INGEST_FLOOR = 0.8;
/** Runs per side in --ingest-only, alternating: the machine's drift falls on both sides alike. */
const INGEST_ONLY_ROUNDS = 2;

/** Search shapes may be no slower than this × their p50 before (issue 11). */
const SEARCH_SLOWDOWN_LIMIT = 1.1;
/** Bytes per record must fall by at least this share (issue 11). */
const BYTES_CUT_TARGET = 0.3;

interface Side {
  label: "before" | "after";
  tree: string;
  commit: string;
  /** The dataset's file as the loader left it. */
  loaded?: DatabaseBytes;
  /** A packed copy (VACUUM INTO): what the per-object table shows. */
  bytes?: DatabaseBytes;
  search?: Record<string, string>[];
  ingest?: Record<string, string>[];
}

function resultsDir(side: Side): string {
  return path.join(DATA_DIR, "storage", `results-${side.label}`);
}

function runAndRead(side: Side, args: string[], report: string): string {
  const since = Date.now();
  runChildBench({ tree: side.tree, args, resultsDir: resultsDir(side) });
  return childReport(side.tree, resultsDir(side), report, since);
}

const perRecord = (bytes: number, records: number) => (bytes / records).toFixed(1);

function change(before: number, after: number): string {
  if (before === 0) return after === 0 ? "—" : "new";
  const delta = (after - before) / before;
  return `${delta > 0 ? "+" : ""}${(delta * 100).toFixed(0)}%`;
}

function bytesTable(before: DatabaseBytes, after: DatabaseBytes, records: number): { table: string; cut: number; totals: [number, number] } {
  const names = new Map<string, { table: string; kind: string }>();
  for (const o of [...before.objects, ...after.objects]) {
    if ((RECORD_TABLES as readonly string[]).includes(o.table)) names.set(o.name, { table: o.table, kind: o.kind });
  }
  const bytesOf = (db: DatabaseBytes, name: string) => db.objects.find((o) => o.name === name)?.bytes ?? 0;
  const entriesOf = (db: DatabaseBytes, name: string) => db.objects.find((o) => o.name === name)?.entries;
  // By table (the table first, then its indexes by size), the record table first.
  const order = [...names.entries()].sort(([a, x], [b, y]) => {
    const t = RECORD_TABLES.indexOf(x.table as (typeof RECORD_TABLES)[number]) - RECORD_TABLES.indexOf(y.table as (typeof RECORD_TABLES)[number]);
    if (t !== 0) return t;
    if (x.kind !== y.kind) return x.kind === "table" ? -1 : 1;
    return Math.max(bytesOf(before, b), bytesOf(after, b)) - Math.max(bytesOf(before, a), bytesOf(after, a));
  });
  const rows = order.map(([name, { table, kind }]) => {
    const b = bytesOf(before, name);
    const a = bytesOf(after, name);
    const entries = (db: DatabaseBytes) => (entriesOf(db, name) === undefined ? "—" : count(entriesOf(db, name)!));
    return [kind === "table" ? `**${name}**` : `${name}`, kind === "table" ? "table" : `index of ${table}`, entries(before), entries(after), perRecord(b, records), perRecord(a, records), change(b, a)];
  });
  const totalBefore = recordBytes(before);
  const totalAfter = recordBytes(after);
  rows.push(["**record tables and their indexes**", "", "", "", perRecord(totalBefore, records), perRecord(totalAfter, records), change(totalBefore, totalAfter)]);
  rows.push(["whole database file", "", "", "", perRecord(before.fileBytes, records), perRecord(after.fileBytes, records), change(before.fileBytes, after.fileBytes)]);
  const table = markdownTable(
    ["table or index", "kind", "rows before", "rows after", "bytes/record before", "bytes/record after", "change"],
    rows,
    ["l", "l", "r", "r", "r", "r", "r"],
  );
  return { table, cut: 1 - totalAfter / totalBefore, totals: [totalBefore, totalAfter] };
}

function searchTable(before: Record<string, string>[], after: Record<string, string>[]): { table: string; failures: string[] } {
  const failures: string[] = [];
  const rows = before.map((b) => {
    const a = after.find((row) => row.shape === b.shape && row.records === b.records);
    const pb = parseFigure(b["endpoint p50 ms"] ?? "");
    const pa = a ? parseFigure(a["endpoint p50 ms"] ?? "") : Number.NaN;
    const eb = parseFigure(b["engine p50 ms"] ?? "");
    const ea = a ? parseFigure(a["engine p50 ms"] ?? "") : Number.NaN;
    const versus = pa / pb;
    const pass = Number.isFinite(versus) && versus <= SEARCH_SLOWDOWN_LIMIT;
    if (!pass) failures.push(`- ${b.shape}: endpoint p50 ${ratio(versus)} of before (target ≤ ${SEARCH_SLOWDOWN_LIMIT}×)`);
    return [b.shape ?? "", b.records ?? "", b["endpoint p50 ms"] ?? "", a?.["endpoint p50 ms"] ?? "—", ratio(versus), b["engine p50 ms"] ?? "", a?.["engine p50 ms"] ?? "—", ratio(ea / eb), pass ? "PASS" : "FAIL"];
  });
  const table = markdownTable(
    ["shape", "records", "endpoint p50 ms before", "after", "after / before", "engine p50 ms before", "after", "after / before", "target"],
    rows,
    ["l", "r", "r", "r", "r", "r", "r", "r", "l"],
  );
  return { table, failures };
}

function ingestTable(before: Record<string, string>[], after: Record<string, string>[], floor = 0.95): { table: string; failures: string[] } {
  const failures: string[] = [];
  const rows = before.map((b) => {
    const path_ = b["payload and path"] ?? "";
    const a = after.find((row) => row["payload and path"] === path_);
    const rb = parseFigure(b["spans/s"] ?? "");
    const ra = a ? parseFigure(a["spans/s"] ?? "") : Number.NaN;
    const service = path_.includes(": service");
    // Throughput on a shared machine moves by a few percent between runs: "not slower" allows 5%.
    const pass = !service || ra / rb >= floor;
    if (!pass) failures.push(`- ${path_}: ${ratio(ra / rb)} of before`);
    return [path_, b["spans/s"] ?? "", a?.["spans/s"] ?? "—", ratio(ra / rb), service ? (pass ? "PASS" : "FAIL") : ""];
  });
  const table = markdownTable(["payload and path", "spans/s before", "spans/s after", "after / before", "target"], rows, ["l", "r", "r", "r", "l"]);
  return { table, failures };
}

/** Each path's spans/s as the mean over the runs of one side (the rows of its ingestion reports). */
function meanIngestRows(runs: Record<string, string>[][]): Record<string, string>[] {
  return runs[0]!.map((row) => {
    const path_ = row["payload and path"];
    const rates = runs.map((rows) => parseFigure(rows.find((r) => r["payload and path"] === path_)?.["spans/s"] ?? ""));
    const mean = rates.reduce((a, b) => a + b, 0) / rates.length;
    return { ...row, "spans/s": count(Math.round(mean)), runs: rates.map((r) => count(Math.round(r))).join(" / ") };
  });
}

async function runIngestOnly(sides: Side[], ref: string, options: StorageBenchOptions, startLoad: number[]): Promise<string> {
  const quick = options.quick ? ["--quick"] : [];
  const runs = new Map<Side, Record<string, string>[][]>(sides.map((side) => [side, []]));
  for (let round = 0; round < INGEST_ONLY_ROUNDS; round++) {
    for (const side of sides) runs.get(side)!.push(markdownRows(runAndRead(side, ["ingest", ...quick], "ingest"), "payload and path"));
  }
  const means = sides.map((side) => meanIngestRows(runs.get(side)!));
  const [before, after] = means as [Record<string, string>[], Record<string, string>[]];
  const ingest = ingestTable(before, after, ROUND_INGEST_FLOOR);
  const perRun = sides.flatMap((side, i) => means[i]!.map((row) => `- ${side.label}, ${row["payload and path"]}: ${row.runs} spans/s`));
  const markdown = [
    "# Ingestion against a baseline",
    "",
    runConditions(startLoad),
    `- before: commit ${sides[0]!.commit.slice(0, 12)} (\`${ref}\`); after: commit ${sides[1]!.commit.slice(0, 12)} (this checkout)`,
    `- each side's own ingestion bench (its schema, triggers and write path, into new databases), ${INGEST_ONLY_ROUNDS} runs per side alternating (before, after, before, after); spans/s is the mean of a side's runs${options.quick ? "; QUICK run (few samples: not for figures)" : ""}`,
    "",
    ingest.table,
    "",
    `Target: the service's throughput at least ${ROUND_INGEST_FLOOR}× before's (this round's rule for what its derived data may cost ingestion).`,
    "",
    "Each run's spans/s:",
    "",
    ...perRun,
    "",
    ingest.failures.length > 0 ? ["Targets missed:", "", ...ingest.failures].join("\n") : "Every target met.",
    "",
  ].join("\n");
  return finishReport("ingest-baseline", markdown, options.quick);
}

export async function runStorageBench(options: StorageBenchOptions): Promise<string> {
  const startLoad = os.loadavg();
  const ref = options.baseline ?? defaultBaselineRef();
  const base = baselineTree(ref);
  const head = spawnSync("git", ["rev-parse", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8" }).stdout.trim();
  const sides: Side[] = [
    { label: "before", tree: base.dir, commit: base.commit },
    { label: "after", tree: REPO_ROOT, commit: head },
  ];
  if (options.ingestOnly) return runIngestOnly(sides, ref, options, startLoad);
  console.log(`storage: before = ${base.commit.slice(0, 12)} (${ref}), after = this checkout; ${count(options.size)} records, seed ${options.seed}`);
  const sizeArgs = ["--sizes", String(options.size), "--seed", String(options.seed)];
  for (const side of sides) {
    runChildBench({ tree: side.tree, args: ["dataset", ...sizeArgs], resultsDir: resultsDir(side) });
    const file = datasetFileOf(side.tree, options.size, options.seed);
    side.loaded = await databaseBytes(file);
    side.bytes = await packedDatabaseBytes(file);
  }
  if (!options.bytesOnly) {
    const quick = options.quick ? ["--quick"] : [];
    const shapes = options.shapes.length > 0 ? ["--shapes", options.shapes.join(",")] : [];
    for (const side of sides) side.search = markdownRows(runAndRead(side, ["search", ...sizeArgs, ...shapes, ...quick], "search"), "shape");
    for (const side of sides) side.ingest = markdownRows(runAndRead(side, ["ingest", ...quick], "ingest"), "payload and path");
  }
  const [before, after] = sides as [Side, Side];
  const bytes = bytesTable(before.bytes!, after.bytes!, options.size);
  const search = before.search && after.search ? searchTable(before.search, after.search) : undefined;
  const ingest = before.ingest && after.ingest ? ingestTable(before.ingest, after.ingest) : undefined;
  const verdicts = [
    bytes.cut >= BYTES_CUT_TARGET ? [] : [`- bytes per record: ${(bytes.cut * 100).toFixed(1)}% less (target ≥ ${BYTES_CUT_TARGET * 100}%)`],
    search?.failures ?? [],
    ingest?.failures ?? [],
  ].flat();
  const markdown = [
    "# Storage benchmark",
    "",
    runConditions(startLoad),
    `- before: commit ${before.commit.slice(0, 12)} (\`${ref}\`); after: commit ${after.commit.slice(0, 12)} (this checkout)`,
    `- dataset: the search benchmark's, ${count(options.size)} records (seed ${options.seed}), generated by each side's own migrations and write statements${options.quick ? "; QUICK run (few samples: not for figures)" : ""}`,
    "",
    `Record tables and their indexes, packed: **${perRecord(bytes.totals[0], options.size)} → ${perRecord(bytes.totals[1], options.size)} bytes per record (${(bytes.cut * 100).toFixed(1)}% less)**; as the loader left them: ${perRecord(recordBytes(before.loaded!), options.size)} → ${perRecord(recordBytes(after.loaded!), options.size)} (${((1 - recordBytes(after.loaded!) / recordBytes(before.loaded!)) * 100).toFixed(1)}% less).`,
    "",
    bytes.table,
    "",
    "Bytes are pages × page size from SQLite's `dbstat` (free space inside pages included) on a packed copy of each dataset (`VACUUM INTO`: every B-tree as full as a bulk load leaves it, whatever order its rows arrived in), divided by the records of the dataset; rows: the table's rows or the index's entries. A live database whose B-trees grew by random inserts carries up to a third more, before and after alike.",
    "",
    ...(search ? ["## Search, same run", "", search.table, "", `Target: no shape's endpoint p50 above ${SEARCH_SLOWDOWN_LIMIT}× its p50 before.`, ""] : []),
    ...(ingest ? ["## Ingestion, same run", "", ingest.table, "", "Target: the service's throughput not lower than before (within 5%, the run-to-run noise of this machine).", ""] : []),
    verdicts.length > 0 ? ["Targets missed:", "", ...verdicts].join("\n") : "Every target met.",
    "",
  ].join("\n");
  return finishReport("storage", markdown, options.quick);
}
