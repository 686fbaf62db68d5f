/// <reference types="node" />
/**
 * The admin command line as an operator runs it (`npm run --silent admin -- ...`), against a
 * local D1 database in a temporary directory; the key it prints is then used against the real
 * service (`wrangler dev` on the same directory), and a key created while the service runs works
 * at once.
 *
 * What is about the process (its exit status, stdout holding only the answer, the password piped
 * on standard input, a failing command that still exits with its local workerd open, a usage
 * error) runs as real `npm run admin` processes (`adminProcess`). The other commands run through
 * the same entry point in this process (`admin`: scripts/lib/admin-cli.ts's runAdmin, the
 * function scripts/admin.ts calls, on this process's one local workerd): each process cost about
 * 4 CPU s of Node, tsx and a workerd, and this file ran about 45 of them (issue 36).
 */
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAdmin } from "../../scripts/lib/admin-cli";
import { freePort, startDevServer, stopDevServer, waitUntilHealthy } from "../../scripts/lib/local-server";
import { closeLocalD1 } from "../../scripts/lib/local-d1";
import { passwordFromInput } from "../../scripts/lib/read-password";
import { REPO_ROOT, executeD1 } from "../../scripts/lib/wrangler";
import { migratedStateDir } from "./migrated-state";

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

let persistTo: string;

/** The command, run in this process through the command line's own entry point (runAdmin). */
function admin(...args: string[]): Promise<CliRun> {
  return adminWithInput(undefined, ...args);
}

/** The same with `input` as the piped standard input (a password, as an operator pipes it). */
async function adminWithInput(input: string | undefined, ...args: string[]): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await runAdmin([...args, "--persist-to", persistTo], {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    readPassword: async () => {
      if (input === undefined) throw new Error("the test gave this command no standard input");
      return passwordFromInput(input);
    },
  });
  return { code, stdout, stderr };
}

/** The command as its own process (`npm run --silent admin`), with `input` on its standard input. */
function adminProcess(input: string | undefined, ...args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["run", "--silent", "admin", "--", ...args, "--persist-to", persistTo], {
      cwd: REPO_ROOT,
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    if (input !== undefined) child.stdin!.end(input);
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The one JSON object a successful command prints, and nothing else on stdout. */
function oneJsonObject(run: CliRun): Record<string, string> {
  expect(run.code, run.stderr).toBe(0);
  const lines = run.stdout.split("\n").filter((l) => l.trim() !== "");
  expect(lines, run.stdout).toHaveLength(1);
  const parsed = JSON.parse(lines[0]!);
  expect(typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)).toBe(true);
  return parsed;
}

function expectFailure(run: CliRun, code: number, message: RegExp): void {
  expect(run.code, `stdout: ${run.stdout}\nstderr: ${run.stderr}`).toBe(code);
  expect(run.stdout).toBe("");
  expect(run.stderr).toMatch(message);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UNKNOWN = "00000000-0000-4000-8000-000000000000";

beforeAll(async () => {
  persistTo = await migratedStateDir("trace-store-admin-");
});

afterAll(async () => {
  // The test's own reads of the databases run in this process (scripts/lib/local-d1.ts).
  await closeLocalD1();
  rmSync(persistTo, { recursive: true, force: true });
});

describe("admin command line", () => {
  let organizationId: string;
  let userId: string;
  let apiKey: string;
  const email = `ops-${Date.now()}@example.com`;
  const password = "correct horse battery";

  it("create-org prints the organization id", async () => {
    const org = oneJsonObject(await adminProcess(undefined, "create-org", "--name", "Acme O'Brien & Co"));
    expect(org).toEqual({ organization_id: expect.stringMatching(UUID), name: "Acme O'Brien & Co" });
    organizationId = org.organization_id!;
  });

  it("create-user prints the user id", async () => {
    const user = oneJsonObject(await admin("create-user", "--org", organizationId, "--email", email.toUpperCase(), "--password", password, "--role", "admin"));
    expect(user).toEqual({ user_id: expect.stringMatching(UUID), organization_id: organizationId, email, role: "admin" });
    userId = user.user_id!;
  });

  it("create-api-key prints the key", async () => {
    const key = oneJsonObject(await admin("create-api-key", "--user", userId));
    expect(key).toEqual({ api_key: expect.stringMatching(/^tsk_[\w-]{43}$/), key_id: expect.stringMatching(UUID), user_id: userId });
    apiKey = key.api_key!;
  });

  it("create-user for an unknown organization fails loudly and creates nothing", async () => {
    // A process: it exits 1 with its local workerd still open (scripts/admin.ts).
    expectFailure(
      await adminProcess(undefined, "create-user", "--org", UNKNOWN, "--email", "ghost@example.com", "--password", password, "--role", "member"),
      1,
      new RegExp(`organization ${UNKNOWN} not found`),
    );
    const [count] = await executeD1("SELECT count(*) AS n FROM users WHERE email = 'ghost@example.com'", { remote: false, persistTo });
    expect(count!.results).toEqual([{ n: 0 }]);
  });

  it("create-user with an email already taken fails", async () => {
    expectFailure(
      await admin("create-user", "--org", organizationId, "--email", email, "--password", password, "--role", "member"),
      1,
      /already exists/,
    );
  });

  it("create-user reads the password from standard input, and warns when it is given on the command line", async () => {
    const piped = oneJsonObject(await adminProcess(`${password}\n`, "create-user", "--org", organizationId, "--email", `piped-${email}`, "--role", "member"));
    expect(piped.user_id).toMatch(UUID);
    const flagged = await admin("create-user", "--org", organizationId, "--email", `flagged-${email}`, "--password", password, "--role", "member");
    expect(oneJsonObject(flagged).user_id).toMatch(UUID);
    expect(flagged.stderr).toMatch(/warning: --password shows the password to shell history/);
  });

  it("revoke-api-key, set-role, reset-password and delete-user change the database and refuse unknown ids", async () => {
    const user = oneJsonObject(await adminWithInput(password, "create-user", "--org", organizationId, "--email", `revoked-${email}`, "--role", "admin"));
    const key = oneJsonObject(await admin("create-api-key", "--user", user.user_id!));
    expect(oneJsonObject(await admin("revoke-api-key", "--key", key.key_id!))).toEqual({ key_id: key.key_id, user_id: user.user_id, revoked: true });
    expectFailure(await admin("revoke-api-key", "--key", key.key_id!), 1, new RegExp(`API key ${key.key_id} not found`));
    expect(oneJsonObject(await admin("set-role", "--user", user.user_id!, "--role", "member"))).toEqual({ user_id: user.user_id, role: "member" });
    expect(oneJsonObject(await adminWithInput("another long password\n", "reset-password", "--user", user.user_id!))).toEqual({ user_id: user.user_id, password_reset: true });
    expectFailure(await admin("reset-password", "--user", user.user_id!, "--password", "on-the-command-line"), 2, /never from the command line/);
    const [row] = await executeD1(`SELECT role, token_generation FROM users WHERE id = '${user.user_id}'`, { remote: false, persistTo });
    expect(row?.results).toEqual([{ role: "member", token_generation: 1 }]);
    expect(oneJsonObject(await admin("delete-user", "--user", user.user_id!))).toEqual({ user_id: user.user_id, email: `revoked-${email}`, deleted: true, api_keys_revoked: 0 });
    expectFailure(await admin("delete-user", "--user", user.user_id!), 1, new RegExp(`user ${user.user_id} not found`));
    expectFailure(await adminWithInput(password, "reset-password", "--user", UNKNOWN), 1, new RegExp(`user ${UNKNOWN} not found`));
  });

  it("create-api-key for an unknown user fails", async () => {
    expectFailure(await admin("create-api-key", "--user", UNKNOWN), 1, new RegExp(`user ${UNKNOWN} not found`));
  });

  it("default-retention sets what new projects of the organization take, and refuses an unknown organization", async () => {
    expect(oneJsonObject(await admin("default-retention", "--org", organizationId, "--days", "45"))).toEqual({ organization_id: organizationId, default_retention_days: 45 });
    expect(oneJsonObject(await admin("default-retention", "--org", organizationId, "--days", "none"))).toEqual({ organization_id: organizationId, default_retention_days: null });
    expectFailure(await admin("default-retention", "--org", UNKNOWN, "--days", "5"), 1, new RegExp(`no organization ${UNKNOWN}`));
  });

  it("a wrong command line is exit status 2 with the usage", async () => {
    const cases: [string[], RegExp][] = [
      [["create-user", "--org", organizationId, "--email", "x@example.com", "--password", password, "--role", "owner"], /--role must be admin or member/],
      [["create-user", "--org", "not-a-uuid", "--email", "x@example.com", "--password", password, "--role", "admin"], /--org must be a UUID/],
      [["create-user", "--org", organizationId, "--email", "x@example.com", "--password", "short", "--role", "admin"], /at least 8 characters/],
      [["create-org"], /--name is required/],
      [["drop-everything"], /unknown command/],
      [["default-retention", "--org", organizationId, "--days", "0"], /--days must be 1 to 3650 or none/],
      [["default-retention", "--org", organizationId, "--days", "forever"], /--days must be 1 to 3650 or none/],
      [["create-org", "--name", "x", "--bogus"], /Usage:/],
    ];
    // One of them as a process: the exit status 2 itself (scripts/admin.ts); the rest through runAdmin.
    const runs = await Promise.all(cases.map(([args]) => (args[0] === "drop-everything" ? adminProcess(undefined, ...args) : admin(...args))));
    runs.forEach((run, i) => expectFailure(run, 2, cases[i]![1]));
  });

  describe("against the running service", () => {
    let server: ChildProcess;
    let baseUrl: string;
    // The service's last lines of output, shown when a test that depends on its background work
    // (the move's queue messages) fails: the CLI only sees the catalog row.
    const serverLog: string[] = [];

    beforeAll(async () => {
      const port = await freePort();
      baseUrl = `http://127.0.0.1:${port}`;
      server = startDevServer({ port, persistTo, inspectorPort: 0, vars: { TOKEN_SECRET: "admin-cli-test-secret-of-sufficient-length" }, stdio: ["ignore", "pipe", "pipe"] });
      for (const stream of [server.stdout!, server.stderr!]) {
        stream.setEncoding("utf8").on("data", (chunk: string) => {
          serverLog.push(...chunk.split("\n").filter((line) => line.trim() !== ""));
          serverLog.splice(0, Math.max(0, serverLog.length - 300));
        });
      }
      await waitUntilHealthy(baseUrl, server);
    });

    afterAll(async () => {
      if (server) await stopDevServer(server);
    });

    it("the printed key authenticates, and the user's password too", async () => {
      const created = await fetch(`${baseUrl}/v2/projects`, {
        method: "POST",
        headers: { "Service-API-Key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ name: "from-the-cli" }),
      });
      expect(created.status).toBe(200);
      const listed = await fetch(`${baseUrl}/v2/projects`, { headers: { Authorization: `Basic ${btoa(`${email}:${password}`)}` } });
      expect(listed.status).toBe(200);
      expect(((await listed.json()) as { name: string }[]).map((p) => p.name)).toEqual(["from-the-cli"]);
      const refused = await fetch(`${baseUrl}/v2/projects`, { headers: { "Service-API-Key": `${apiKey}x` } });
      expect(refused.status).toBe(401);
    });

    it("a member and a key created while the service runs work at once", async () => {
      const member = oneJsonObject(await admin("create-user", "--org", organizationId, "--email", `member-${email}`, "--password", password, "--role", "member"));
      const key = oneJsonObject(await admin("create-api-key", "--user", member.user_id!));
      const login = await fetch(`${baseUrl}/login/api_key`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ api_key: key.api_key }),
      });
      expect(login.status).toBe(200);
      const { access_token } = (await login.json()) as { access_token: string };
      const listed = await fetch(`${baseUrl}/v2/projects`, { headers: { Authorization: `Bearer ${access_token}` } });
      expect(listed.status).toBe(200);
      expect(((await listed.json()) as { name: string }[]).map((p) => p.name)).toEqual(["from-the-cli"]);
    });

    it("a revoked key, and the tokens exchanged from it, stop working within 5 s while the service runs", async () => {
      const user = oneJsonObject(await adminWithInput(password, "create-user", "--org", organizationId, "--email", `live-${email}`, "--role", "member"));
      const key = oneJsonObject(await admin("create-api-key", "--user", user.user_id!));
      const login = await fetch(`${baseUrl}/login/api_key`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ api_key: key.api_key }) });
      const { access_token } = (await login.json()) as { access_token: string };
      const asKey = () => fetch(`${baseUrl}/v2/current_user`, { headers: { "Service-API-Key": key.api_key! } }).then((r) => r.status);
      const asToken = () => fetch(`${baseUrl}/v2/current_user`, { headers: { Authorization: `Bearer ${access_token}` } }).then((r) => r.status);
      expect([await asKey(), await asToken()]).toEqual([200, 200]);
      oneJsonObject(await admin("revoke-api-key", "--key", key.key_id!));
      const revokedAt = Date.now();
      await expect.poll(async () => [await asKey(), await asToken()], { timeout: 10_000, interval: 250 }).toEqual([401, 401]);
      // 5 s of cache at most, plus the polling requests themselves on a busy machine.
      expect(Date.now() - revokedAt).toBeLessThan(7_000);
    });

    it("shards reports each database's size, records and projects", async () => {
      const created = await fetch(`${baseUrl}/v2/projects`, {
        method: "POST",
        headers: { "Service-API-Key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ name: "reported" }),
      });
      const project = (await created.json()) as { id: string };
      const stream = await fetch(`${baseUrl}/v2/projects/${project.id}/log_streams`, {
        method: "POST",
        headers: { "Service-API-Key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ name: "default" }),
      });
      const { id: logStreamId } = (await stream.json()) as { id: string };
      const ingested = await fetch(`${baseUrl}/v2/projects/${project.id}/traces`, {
        method: "POST",
        headers: { "Service-API-Key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ log_stream_id: logStreamId, traces: [{ name: "t", spans: [{ type: "llm" }, { type: "tool" }] }] }),
      });
      expect(ingested.status).toBe(200);
      // The hourly maintenance records every database's size in the catalog (locally the command
      // line cannot measure them itself). It runs after /__scheduled has answered (waitUntil):
      // the report is read until it shows the sizes (a command's own process used to take longer).
      expect((await fetch(`${baseUrl}/__scheduled`)).status).toBe(200);
      type Report = { shards: { shard: string; size_bytes: number | null; records: Record<string, number>; projects: { id: string; name: string; state: string }[] }[] };
      let report: Report = { shards: [] };
      await expect
        .poll(async () => {
          report = oneJsonObject(await admin("shards")) as unknown as Report;
          return report.shards.map((s) => s.size_bytes !== null && s.size_bytes > 0);
        }, { interval: 500 })
        .toEqual([true, true, true]);
      expect(report.shards.map((s) => s.shard)).toEqual(["DB", "SHARD_0", "SHARD_1"]);
      const home = report.shards.find((s) => s.projects.some((p) => p.id === project.id))!;
      expect(home.shard).toMatch(/^SHARD_/);
      expect(home.projects.find((p) => p.id === project.id)).toMatchObject({ name: "reported", state: "active" });
      expect(home.records).toMatchObject({ traces: 1, spans: 2 });
    });

    it("move-project moves a project's records while the service runs, and move-status shows the move", async () => {
      const headers = { "Service-API-Key": apiKey, "content-type": "application/json" };
      const project = (await (await fetch(`${baseUrl}/v2/projects`, { method: "POST", headers, body: JSON.stringify({ name: "moving" }) })).json()) as { id: string };
      const stream = (await (await fetch(`${baseUrl}/v2/projects/${project.id}/log_streams`, { method: "POST", headers, body: JSON.stringify({ name: "default" }) })).json()) as { id: string };
      const traces = Array.from({ length: 30 }, (_, i) => ({ name: `t${i}`, user_metadata: { i: String(i) }, tags: ["moved"], spans: [{ type: "llm", name: `s${i}` }] }));
      expect((await fetch(`${baseUrl}/v2/projects/${project.id}/traces`, { method: "POST", headers, body: JSON.stringify({ log_stream_id: stream.id, traces }) })).status).toBe(200);
      const search = async () => {
        const answer = await fetch(`${baseUrl}/v2/projects/${project.id}/traces/partial_search`, { method: "POST", headers, body: JSON.stringify({ log_stream_id: stream.id, limit: 100 }) });
        expect(answer.status).toBe(200);
        return ((await answer.json()) as { records: { name: string }[] }).records.map((r) => r.name).sort();
      };
      const before = await search();
      const [placed] = await executeD1(`SELECT shard FROM projects WHERE id = '${project.id}'`, { remote: false, persistTo });
      const from = String(placed!.results[0]!.shard);
      const to = from === "SHARD_0" ? "SHARD_1" : "SHARD_0";

      const moving = await admin("move-project", "--project", project.id, "--to", to, "--url", baseUrl, "--wait", "--timeout", "240");
      if (moving.code !== 0) throw new Error(`move-project failed: ${moving.stderr}\nthe service's last lines:\n${serverLog.join("\n")}`);
      const moved = oneJsonObject(moving) as unknown as Record<string, any>;
      expect(moved).toMatchObject({ project_id: project.id, source: from, target: to, phase: "completed", status: "running", error_message: null, resumed: false });
      expect(moved.started).toMatch(/started by the worker/);
      expect(moved.progress).toMatchObject({ records_total: 60, records_copied: 60, old_records_deleted: 60 });
      expect(moved.verified).toMatchObject({ source: { traces: 30, spans: 30 }, target: { traces: 30, spans: 30 } });
      expect(await search()).toEqual(before);
      const [after] = await executeD1(`SELECT shard FROM projects WHERE id = '${project.id}'`, { remote: false, persistTo });
      expect(after!.results[0]!.shard).toBe(to);

      const status = oneJsonObject(await admin("move-status", "--project", project.id)) as unknown as Record<string, unknown>;
      expect(status).toMatchObject({ move_id: moved.move_id, phase: "completed" });
      // Ingest goes on, on the new shard.
      expect((await fetch(`${baseUrl}/v2/projects/${project.id}/traces`, { method: "POST", headers, body: JSON.stringify({ log_stream_id: stream.id, traces: [{ name: "later" }] }) })).status).toBe(200);
      expect(await search()).toContain("later");

      // Refusals only read the catalog (or nothing), each its own command, one after another: run
      // side by side, six `wrangler d1 execute` (now six commands' in-process workerds) opening the catalog at once beside the service's own
      // workerd failed one read with D1's "internal error" (SQLite busy; clean-clone run of
      // 2026-11-29, load 6-10).
      const refusals: [string[], number, RegExp][] = [
        [["move-project", "--project", project.id, "--to", to, "--url", baseUrl], 1, new RegExp(`already on ${to}`)],
        [["move-project", "--project", project.id, "--to", "SHARD_7", "--url", baseUrl], 1, /unknown shard "SHARD_7"/],
        [["move-project", "--project", UNKNOWN, "--to", from, "--url", baseUrl], 1, new RegExp(`project ${UNKNOWN} not found`)],
        [["move-project", "--project", project.id, "--to", "no such; shard"], 2, /--to must be a D1 binding name/],
        [["move-project", "--to", from], 2, /--project is required/],
        [["move-status", "--project", UNKNOWN], 1, /has never been moved/],
      ];
      for (const [args, code, message] of refusals) expectFailure(await admin(...args), code, message);
    });
  });
});
