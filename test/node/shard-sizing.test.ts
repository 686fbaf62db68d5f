/// <reference types="node" />
/**
 * Sizing a deployment's shards for a stated ingest rate and retention (issue 32, item 5;
 * docs/deploying.md, "How many shards"): the arithmetic, the change to wrangler.toml (read back
 * through wrangler's own config reader, as `npm run provision` reads it), and the command line's
 * `--plan` and bad input, which change nothing.
 */
import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { boundResources, sizeShards } from "../../scripts/lib/provision";
import { DEFAULT_BYTES_PER_SPAN, SizingError, dataShardsOf, shardsFor, sizingRequestOf, sizingTable, withDataShards } from "../../scripts/lib/shard-sizing";

const ROOT = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), "trace-store-sizing-"));
const WRANGLER_TOML = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
const GB = 1e9;

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("shards for a stated load", () => {
  it("fills shards to the high-water mark with spans per day x retention x bytes per span, plus one spare, never fewer than two", () => {
    // 1M spans a day kept 30 days at 2,668 B: 80.04 GB over 8 GB marks = 10.005, so 11 filled, 12 bound.
    const busy = shardsFor({ spansPerDay: 1_000_000, retentionDays: 30, bytesPerSpan: DEFAULT_BYTES_PER_SPAN, highWaterBytes: 8 * GB });
    expect(busy.retainedBytes).toBe(80_040_000_000);
    expect(busy.filled).toBe(11);
    expect(busy.shards).toBe(12);
    // Exactly one shard's worth: filled 1, one spare.
    expect(shardsFor({ spansPerDay: 1_000_000, retentionDays: 8, bytesPerSpan: 1_000, highWaterBytes: 8 * GB }).shards).toBe(2);
    expect(shardsFor({ spansPerDay: 1_000_001, retentionDays: 8, bytesPerSpan: 1_000, highWaterBytes: 8 * GB }).shards).toBe(3);
    expect(shardsFor({ spansPerDay: 10, retentionDays: 1, bytesPerSpan: 1, highWaterBytes: 8 * GB }).shards).toBe(2);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => shardsFor({ spansPerDay: bad, retentionDays: 30, bytesPerSpan: 100, highWaterBytes: 8 * GB })).toThrow(SizingError);
      expect(() => shardsFor({ spansPerDay: 1, retentionDays: bad, bytesPerSpan: 100, highWaterBytes: 8 * GB })).toThrow(/--retention-days/);
    }
  });

  it("tabulates shards by rate and retention, growing with both", () => {
    const table = sizingTable(8 * GB);
    const rows = table.split("\n").slice(2).map((line) => line.split("|").slice(2, -1).map((cell) => Number(cell.trim())));
    expect(rows).toHaveLength(4);
    for (const row of rows) for (let i = 1; i < row.length; i++) expect(row[i]).toBeGreaterThanOrEqual(row[i - 1]!);
    for (let r = 1; r < rows.length; r++) for (let c = 0; c < rows[r]!.length; c++) expect(rows[r]![c]).toBeGreaterThanOrEqual(rows[r - 1]![c]!);
    expect(table).toContain("| 1,000,000 | 4 | 12 | 32 | 123 |");
  });

  it("adds the missing shards to wrangler.toml after the bound ones, names them in DATA_SHARDS, and never removes one", () => {
    const grown = withDataShards(WRANGLER_TOML, 5);
    expect(grown.added).toEqual(["SHARD_2", "SHARD_3", "SHARD_4"]);
    expect(dataShardsOf(grown.toml)).toEqual(["SHARD_0", "SHARD_1", "SHARD_2", "SHARD_3", "SHARD_4"]);
    // Read back as provision reads it: every new shard a database with the shard migrations.
    const file = join(work, "grown.toml");
    copyFileSync(join(ROOT, "wrangler.toml"), file);
    const report = sizeShards({ spansPerDay: 1_000_000, retentionDays: 10, bytesPerSpan: DEFAULT_BYTES_PER_SPAN }, false, file);
    expect(report).toMatchObject({ shards_needed: 5, shards_bound: ["SHARD_0", "SHARD_1"], added: ["SHARD_2", "SHARD_3", "SHARD_4"], high_water_bytes: 8_000_000_000 });
    const databases = boundResources(file).d1Databases;
    expect(databases.map((d) => d.binding)).toEqual(["DB", "SHARD_0", "SHARD_1", "SHARD_2", "SHARD_3", "SHARD_4"]);
    expect(databases.map((d) => d.name)).toContain("trace-store-shard-4");
    const text = readFileSync(file, "utf8");
    // Each its own placeholder id (npm start keys local databases by id), and the rest untouched.
    const ids = [...text.matchAll(/^database_id = "([^"]+)"/gm)].map((m) => m[1]);
    expect(new Set(ids).size).toBe(ids.length);
    const lines = (toml: string) => toml.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("DATA_SHARDS"));
    const rest = lines(text);
    // Each new block as a bound shard's, and without them the file is the original.
    for (const n of [2, 3, 4]) {
      const block = rest.splice(rest.indexOf(`binding = "SHARD_${n}"`) - 1, 5);
      expect(block).toEqual(["[[d1_databases]]", `binding = "SHARD_${n}"`, `database_name = "trace-store-shard-${n}"`, `database_id = "00000000-0000-0000-0000-0000000000${10 + n}"`, 'migrations_dir = "migrations/shard"']);
    }
    expect(rest).toEqual(lines(WRANGLER_TOML));
    // Run again, or with a smaller load: nothing added, nothing removed.
    expect(sizeShards({ spansPerDay: 1_000_000, retentionDays: 10, bytesPerSpan: DEFAULT_BYTES_PER_SPAN }, false, file).added).toEqual([]);
    expect(sizeShards({ spansPerDay: 1_000, retentionDays: 7, bytesPerSpan: DEFAULT_BYTES_PER_SPAN }, false, file).added).toEqual([]);
    expect(readFileSync(file, "utf8")).toBe(text);
    // A binding that DATA_SHARDS does not name is the operator's to sort out, not overwritten.
    const stray = `${WRANGLER_TOML}\n[[d1_databases]]\nbinding = "SHARD_2"\ndatabase_name = "elsewhere"\ndatabase_id = "x"\nmigrations_dir = "migrations/shard"\n`;
    expect(() => withDataShards(stray, 3)).toThrow(/binds SHARD_2 but DATA_SHARDS does not name it/);
    // Past what one Worker may bind, refused rather than written.
    expect(() => withDataShards(WRANGLER_TOML, 5_001)).toThrow(/needs 5,001 data shards, more than the about 5,000 D1 bindings/);
  });

  it("prints the plan without changing wrangler.toml or calling wrangler, and refuses bad input with a clear message", async () => {
    const tsx = join(ROOT, "node_modules", ".bin", "tsx");
    // No wrangler on PATH at all: the plan must not need one.
    const env = { ...process.env, PATH: "/usr/bin:/bin" };
    const { stdout } = await run(tsx, ["scripts/provision.ts", "--spans-per-day", "10000000", "--retention-days", "30", "--plan"], { cwd: ROOT, env });
    const plan = JSON.parse(stdout) as { sizing: { shards_needed: number; added: string[] } };
    expect(plan.sizing.shards_needed).toBe(102);
    expect(plan.sizing.added).toHaveLength(100);
    expect(readFileSync(join(ROOT, "wrangler.toml"), "utf8")).toBe(WRANGLER_TOML);
    // Bad input: the message, exit code 1, nothing run (the cases themselves: the test below).
    const failed = await run(tsx, ["scripts/provision.ts", "--spans-per-day", "lots", "--retention-days", "30"], { cwd: ROOT, env }).catch((error: { code: number; stderr: string }) => error);
    expect((failed as { code: number }).code).toBe(1);
    expect((failed as { stderr: string }).stderr).toContain("--spans-per-day must be a positive number");
    expect(readFileSync(join(ROOT, "wrangler.toml"), "utf8")).toBe(WRANGLER_TOML);
  }, 120_000);

  it("checks the options together: both of rate and retention, numbers above zero, --plan only with them", () => {
    expect(sizingRequestOf({})).toBeUndefined();
    expect(sizingRequestOf({ spansPerDay: "1000", retentionDays: "30" })).toEqual({ spansPerDay: 1000, retentionDays: 30, bytesPerSpan: DEFAULT_BYTES_PER_SPAN });
    expect(sizingRequestOf({ spansPerDay: "1e6", retentionDays: "7", bytesPerSpan: "20000", plan: true })).toEqual({ spansPerDay: 1e6, retentionDays: 7, bytesPerSpan: 20000 });
    expect(() => sizingRequestOf({ spansPerDay: "1000" })).toThrow("give both --spans-per-day and --retention-days");
    expect(() => sizingRequestOf({ retentionDays: "30" })).toThrow("give both --spans-per-day and --retention-days");
    expect(() => sizingRequestOf({ plan: true })).toThrow("--plan and --bytes-per-span need --spans-per-day and --retention-days");
    expect(() => sizingRequestOf({ bytesPerSpan: "100" })).toThrow(SizingError);
    expect(() => sizingRequestOf({ spansPerDay: "1000", retentionDays: "0" })).toThrow("--retention-days must be a positive number");
    expect(() => sizingRequestOf({ spansPerDay: "1000", retentionDays: "30", bytesPerSpan: "-5" })).toThrow("--bytes-per-span must be a positive number");
  });
});
