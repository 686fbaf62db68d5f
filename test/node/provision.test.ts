/// <reference types="node" />
/**
 * `npm run provision` as a new operator runs it, against a fake `wrangler` on PATH that records its
 * calls and answers as Cloudflare's wrangler does (and "already exists" the second time), then the
 * real wrangler proves the config it wrote with `wrangler deploy --dry-run`, offline. Each run
 * starts a dozen processes (tsx, wrangler's config reader, the fake), hence the generous timeouts
 * on a busy machine.
 */
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureUiBuilt } from "../../scripts/lib/build-ui";
import { boundResources } from "../../scripts/lib/provision";

const ROOT = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

/**
 * The fake: state (databases, queues, buckets, secrets, applied migrations) in FAKE_WRANGLER_STATE,
 * every call appended to calls.jsonl beside it. Output as wrangler 4.86 prints it.
 */
const FAKE_WRANGLER = String.raw`#!/usr/bin/env node
const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const file = process.env.FAKE_WRANGLER_STATE;
const state = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : { d1: {}, queues: [], buckets: [], secrets: [], migrated: {} };
const args = process.argv.slice(2);
const stdin = args[0] === "secret" && args[1] === "put" ? fs.readFileSync(0, "utf8") : undefined;
fs.appendFileSync(path.join(path.dirname(file), "calls.jsonl"), JSON.stringify({ args, stdinLength: stdin && stdin.length }) + "\n");
const save = () => fs.writeFileSync(file, JSON.stringify(state));
const fail = (text) => { process.stderr.write("\n✘ [ERROR] " + text + "\n\n"); process.exit(1); };
const apiFail = (route, text) => fail("A request to the Cloudflare API (/accounts/0123456789abcdef/" + route + ") failed.\n\n  " + text);
const option = (name) => { const i = args.indexOf(name); return i < 0 ? undefined : args[i + 1]; };
const [a, b, c, d] = args;
if (a === "d1" && b === "create") {
  if (state.d1[c]) fail("A database with that name already exists");
  state.d1[c] = crypto.randomUUID(); save();
  console.log("✅ Successfully created DB '" + c + "' in region WEUR\nCreated your new D1 database.\n");
  console.log("To access your new D1 Database in your Worker, add the following snippet to your configuration file:\n[[d1_databases]]\nbinding = \"DB\"\ndatabase_name = \"" + c + "\"\ndatabase_id = \"" + state.d1[c] + "\"");
} else if (a === "d1" && b === "list" && args.includes("--json")) {
  console.log(JSON.stringify(Object.entries(state.d1).map(([name, uuid]) => ({ uuid, name, created_at: "2026-11-25T18:00:00.000Z", version: "production", num_tables: 0, file_size: 0 })), null, 2));
} else if (a === "queues" && b === "create") {
  console.log("🌀 Creating queue '" + c + "'");
  if (state.queues.includes(c)) apiFail("queues", "Queue name already taken [code: 11009]");
  state.queues.push(c); save();
  console.log("✅ Created queue '" + c + "'");
} else if (a === "r2" && b === "bucket" && c === "create") {
  console.log("Creating bucket '" + d + "'...");
  if (state.buckets.includes(d)) apiFail("r2/buckets", "The bucket you tried to create already exists, and you own it. [code: 10004]");
  state.buckets.push(d); save();
  console.log("✅ Created bucket '" + d + "' with default storage class of Standard.");
} else if (a === "d1" && b === "migrations" && c === "apply") {
  // The config must name, for this binding, a database that exists on the account.
  if (!args.includes("--remote")) fail("fake: expected --remote");
  const config = fs.readFileSync(path.resolve(option("--config") || "wrangler.toml"), "utf8");
  const block = config.split(/^\[\[/m).find((b) => b.startsWith("d1_databases]]") && new RegExp("^binding = \"" + d + "\"$", "m").test(b));
  const id = block && /^database_id = "([^"]+)"/m.exec(block)[1];
  const name = block && /^database_name = "([^"]+)"/m.exec(block)[1];
  if (!id || state.d1[name] !== id) apiFail("d1/database/" + id + "/query", "Couldn't find DB with the specified ID [code: 7404]");
  if (state.migrated[id]) { console.log("✅ No migrations to apply!"); process.exit(0); }
  const dir = path.resolve(/^migrations_dir = "([^"]+)"/m.exec(block)[1]);
  state.migrated[id] = fs.readdirSync(dir).filter((f) => f.endsWith(".sql")); save();
  console.log("Migrations to be applied:\n" + state.migrated[id].join("\n") + "\n✅ Applied " + state.migrated[id].length + " migrations.");
} else if (a === "secret" && b === "list") {
  if (state.secrets.length === 0) fail("Worker \"trace-store\" not found.\n\nIf this is a new Worker, run \x60wrangler deploy\x60 first to create it.");
  console.log(JSON.stringify(state.secrets.map((name) => ({ name, type: "secret_text" })), null, "  "));
} else if (a === "secret" && b === "put") {
  if (stdin.trim().length < 32) fail("fake: secret too short");
  state.secrets.push(c); save();
  console.log("🌀 Creating the secret for the Worker \"trace-store\" \n✨ Success! Uploaded secret " + c);
} else {
  fail("fake wrangler: unexpected call " + args.join(" "));
}
`;

let work: string;
let fakeBin: string;
const configName = `wrangler.production.test-${process.pid}.toml`;

interface Call {
  args: string[];
  stdinLength?: number;
}

function calls(): Call[] {
  return readFileSync(join(work, "calls.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line) as Call);
}

async function provision(): Promise<{ report: any; log: string }> {
  const { stdout, stderr } = await run(join(ROOT, "node_modules", ".bin", "tsx"), ["scripts/provision.ts", "--config", configName], {
    cwd: ROOT,
    env: { ...process.env, PATH: `${fakeBin}:${process.env.PATH}`, FAKE_WRANGLER_STATE: join(work, "state.json") },
  });
  return { report: JSON.parse(stdout), log: stderr };
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "trace-store-provision-"));
  fakeBin = join(work, "bin");
  await run("mkdir", ["-p", fakeBin]);
  writeFileSync(join(fakeBin, "wrangler"), FAKE_WRANGLER);
  chmodSync(join(fakeBin, "wrangler"), 0o755);
  await ensureUiBuilt();
});

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
  rmSync(join(ROOT, configName), { force: true });
});

describe("npm run provision", () => {
  it("reads what to create from wrangler.toml: every database, queue, dead-letter queue and bucket", () => {
    const resources = boundResources();
    expect(resources.d1Databases.map((d) => d.binding)).toEqual(expect.arrayContaining(["DB", "SHARD_0", "SHARD_1"]));
    expect(resources.queues).toEqual(expect.arrayContaining(["trace-store-deletions", "trace-store-deletions-dlq", "trace-store-moves", "trace-store-moves-dlq"]));
    // A binding added later (a bucket, a shard) is picked up with no change to the script.
    const extended = join(work, "wrangler.toml");
    writeFileSync(
      extended,
      `${readFileSync(join(ROOT, "wrangler.toml"), "utf8")}\n[[r2_buckets]]\nbinding = "EXPORTS"\nbucket_name = "trace-store-exports"\n\n[[d1_databases]]\nbinding = "SHARD_2"\ndatabase_name = "trace-store-shard-2"\ndatabase_id = "00000000-0000-0000-0000-000000000012"\nmigrations_dir = "migrations/shard"\n`,
    );
    const more = boundResources(extended);
    expect(more.buckets).toEqual(["trace-store-exports"]);
    expect(more.d1Databases.map((d) => d.name)).toContain("trace-store-shard-2");
  });

  it("creates what wrangler.toml binds, writes the ids into a deploy-only config, migrates, sets the secret; a second run changes nothing", async () => {
    const wranglerToml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
    const resources = boundResources();
    const first = await provision();
    expect(first.report.created.sort()).toEqual(
      [...resources.d1Databases.map((d) => `d1 ${d.name}`), ...resources.queues.map((q) => `queue ${q}`), ...resources.buckets.map((b) => `r2 ${b}`)].sort(),
    );
    expect(first.report.existing).toEqual([]);
    expect(first.report.secret).toBe("set");
    expect(first.report.migrated).toEqual(resources.d1Databases.map((d) => d.binding));

    // The deploy config names the created databases; wrangler.toml keeps npm start's local ids.
    const state = JSON.parse(readFileSync(join(work, "state.json"), "utf8"));
    const written = readFileSync(join(ROOT, configName), "utf8");
    for (const { name } of resources.d1Databases) {
      expect(first.report.databaseIds[name]).toBe(state.d1[name]);
      expect(written).toContain(`database_id = "${state.d1[name]}"`);
    }
    expect(written).not.toMatch(/00000000-0000-0000-0000/);
    expect(readFileSync(join(ROOT, "wrangler.toml"), "utf8")).toBe(wranglerToml);
    // Every database has the migrations of its folder (catalog or shard).
    const sqlFiles = (dir: string) => readdirSync(join(ROOT, dir)).filter((f) => f.endsWith(".sql"));
    expect(state.migrated[state.d1["trace-store"]]).toEqual(sqlFiles("migrations"));
    for (const shard of resources.d1Databases.filter((d) => d.binding !== "DB")) expect(state.migrated[state.d1[shard.name]]).toEqual(sqlFiles("migrations/shard"));
    const puts = calls().filter((c) => c.args[0] === "secret" && c.args[1] === "put");
    expect(puts).toHaveLength(1);
    expect(puts[0]!.stdinLength).toBeGreaterThanOrEqual(48);

    const second = await provision();
    expect(second.report.created).toEqual([]);
    expect(second.report.existing.sort()).toEqual(first.report.created.sort());
    expect(second.report.databaseIds).toEqual(first.report.databaseIds);
    // The secret is kept: a new one would sign everyone out.
    expect(second.report.secret).toBe("kept");
    expect(calls().filter((c) => c.args[0] === "secret" && c.args[1] === "put")).toHaveLength(1);
    expect(readFileSync(join(ROOT, configName), "utf8")).toBe(written);
  }, 600_000);

  it("stops with wrangler's message when a create fails for another reason than existing", async () => {
    const broken = join(work, "broken-bin");
    await run("mkdir", ["-p", broken]);
    writeFileSync(join(broken, "wrangler"), `#!/bin/sh\necho "✘ [ERROR] You are not authenticated. Please run \\\`wrangler login\\\`." >&2\nexit 1\n`);
    chmodSync(join(broken, "wrangler"), 0o755);
    const failed = await run(join(ROOT, "node_modules", ".bin", "tsx"), ["scripts/provision.ts", "--config", configName], {
      cwd: ROOT,
      env: { ...process.env, PATH: `${broken}:${process.env.PATH}` },
    }).catch((error: { code: number; stderr: string }) => error);
    expect((failed as { code: number }).code).toBe(1);
    expect((failed as { stderr: string }).stderr).toContain("You are not authenticated");
  }, 300_000);

  it("writes a config that the real wrangler deploys (dry run, offline)", async () => {
    expect(existsSync(join(ROOT, configName))).toBe(true);
    const outdir = join(work, "dry-run");
    const { stdout } = await run(join(ROOT, "node_modules", ".bin", "wrangler"), ["deploy", "--dry-run", "--config", configName, "--outdir", outdir], {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_API_TOKEN: "" },
    });
    expect(stdout).toContain("--dry-run: exiting now.");
    // Wrangler lists the bindings it would deploy with: every database and queue producer.
    for (const { binding, name } of boundResources().d1Databases) expect(stdout).toContain(`env.${binding} (${name})`);
    expect(stdout).toContain("env.MOVE_QUEUE (trace-store-moves)");
    expect(existsSync(join(outdir, "index.js"))).toBe(true);
  }, 300_000);
});
