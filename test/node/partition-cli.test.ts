/// <reference types="node" />
/**
 * `npm run admin -- roll-partition` as an operator runs it (docs/partitions.md, contract section
 * 13), against local D1 databases in a temporary directory: it prints `{project_id, closed,
 * opened, shard}` and exits 0; a malformed project id is a usage error (2), an unknown project a
 * message and exit 1, and neither changes anything. `move-partition` refuses an unknown or open
 * partition with the reason (exit 1), changing nothing, asks for a move of a closed partition (the
 * worker runs it: test/partition-moves.test.ts) and refuses a second.
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, executeD1 } from "../../scripts/lib/wrangler";
import { migratedStateDir } from "./migrated-state";

let persistTo: string;

function admin(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["run", "--silent", "admin", "--", ...args, "--persist-to", persistTo], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const catalog = async (sql: string) => (await executeD1(sql, { remote: false, persistTo }))[0]?.results ?? [];
const PROJECT = "11111111-2222-4333-8444-555555555555";
/** A project with a closed partition alone on SHARD_1 (its home and open partition on SHARD_0). */
const SPREAD = "11111111-2222-4333-8444-666666666666";

beforeAll(async () => {
  persistTo = await migratedStateDir("trace-store-partitions-");
  await catalog(
    `INSERT INTO organizations (id, name, created_at) VALUES ('org-roll', 'o', 0);
     INSERT INTO projects (id, organization_id, name, type, created_at, updated_at, shard) VALUES ('${PROJECT}', 'org-roll', 'p', 'gen_ai', 5, 5, 'SHARD_0');
     INSERT INTO project_partitions (id, project_id, seq, shard, state, opened_at) VALUES ('aaaaaaaa-0000-4000-8000-000000000001', '${PROJECT}', 1, 'SHARD_0', 'open', 5);
     INSERT INTO projects (id, organization_id, name, type, created_at, updated_at, shard) VALUES ('${SPREAD}', 'org-roll', 'q', 'gen_ai', 5, 5, 'SHARD_0');
     INSERT INTO project_partitions (id, project_id, seq, shard, state, opened_at, closed_at) VALUES
       ('bbbbbbbb-0000-4000-8000-000000000001', '${SPREAD}', 1, 'SHARD_0', 'closed', 5, 6),
       ('bbbbbbbb-0000-4000-8000-000000000002', '${SPREAD}', 2, 'SHARD_1', 'closed', 6, 7),
       ('bbbbbbbb-0000-4000-8000-000000000003', '${SPREAD}', 3, 'SHARD_0', 'open', 7, NULL)`,
  );
});

afterAll(() => {
  rmSync(persistTo, { recursive: true, force: true });
});

const partitions = () => catalog(`SELECT id, seq, shard, state, closed_at IS NOT NULL AS closed FROM project_partitions WHERE project_id = '${PROJECT}' ORDER BY seq`);

describe("roll-partition", () => {
  it("refuses a malformed or unknown project, changing nothing", async () => {
    const malformed = await admin("roll-partition", "--project", "not-a-uuid");
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/--project must be a UUID/);
    const unknown = await admin("roll-partition", "--project", "00000000-0000-4000-8000-000000000000");
    expect(unknown.code, unknown.stderr).toBe(1);
    expect(unknown.stdout).toBe("");
    expect(unknown.stderr).toMatch(/project 00000000-0000-4000-8000-000000000000 not found/);
    expect(await partitions()).toEqual([{ id: "aaaaaaaa-0000-4000-8000-000000000001", seq: 1, shard: "SHARD_0", state: "open", closed: 0 }]);
  });

  it("closes the open partition and opens one on a configured shard, printing both", async () => {
    const run = await admin("roll-partition", "--project", PROJECT);
    expect(run.code, run.stderr).toBe(0);
    const printed = JSON.parse(run.stdout.trim());
    expect(printed).toMatchObject({ project_id: PROJECT, closed: "aaaaaaaa-0000-4000-8000-000000000001" });
    // Placed like a new project (PARTITION_ROLLING is on in wrangler.toml): no sizes recorded yet,
    // so the tie goes to the shard with fewer open partitions, SHARD_1 (both projects' are on SHARD_0).
    expect(printed.shard).toBe("SHARD_1");
    expect(await partitions()).toEqual([
      { id: "aaaaaaaa-0000-4000-8000-000000000001", seq: 1, shard: "SHARD_0", state: "closed", closed: 1 },
      { id: printed.opened, seq: 2, shard: printed.shard, state: "open", closed: 0 },
    ]);
  });
});

describe("move-partition", () => {
  const moves = () => catalog(`SELECT partition_id, source, target, phase FROM project_moves WHERE project_id = '${SPREAD}'`);
  // No worker listens there: the move stays queued for the service's cron.
  const move = (...args: string[]) => admin("move-partition", "--project", SPREAD, "--url", "http://127.0.0.1:9", ...args);

  it("refuses what cannot move with the reason, changing nothing; asks for the move of a closed partition; refuses a second", async () => {
    // Each run is a process start (seconds on a loaded machine): the other refusals' reasons are
    // checked in test/partition-moves.test.ts, as the function both sides call.
    const refusals: [string[], RegExp][] = [
      [["--partition", "9", "--to", "DB"], /has no partition 9 \(its partitions: 1 bbbbbbbb-0000-4000-8000-000000000001 on SHARD_0, closed; 2 /],
      [["--partition", "3", "--to", "SHARD_1"], /partition 3 .* is the project's open partition.*roll-partition --project/],
    ];
    for (const [args, message] of refusals) {
      const answer = await move(...args);
      expect(answer.code, `${args.join(" ")}: ${answer.stderr}`).toBe(1);
      expect(answer.stdout).toBe("");
      expect(answer.stderr).toMatch(message);
    }
    expect(await moves()).toEqual([]);

    const asked = await move("--partition", "2", "--to", "DB");
    expect(asked.code, asked.stderr).toBe(0);
    expect(JSON.parse(asked.stdout.trim())).toMatchObject({
      project_id: SPREAD,
      partition_id: "bbbbbbbb-0000-4000-8000-000000000002",
      source: "SHARD_1",
      target: "DB",
      phase: "queued",
      resumed: false,
      started: expect.stringMatching(/no worker answered/),
    });
    const again = await move("--partition", "2", "--to", "DB");
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already has a move of its partition bbbbbbbb-0000-4000-8000-000000000002/);
    expect(await moves()).toEqual([{ partition_id: "bbbbbbbb-0000-4000-8000-000000000002", source: "SHARD_1", target: "DB", phase: "queued" }]);
  }, 120_000);
});
