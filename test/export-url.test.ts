/**
 * `POST /v2/projects/{pid}/export_records/url` (contract section 10): the export as a queued job
 * writing to R2 through the real queue consumer (one page of roots per message in the tests, so a
 * large export spans several messages and carries its partial part between them), the org-job's
 * progress and who may read it, the signed download URL (409 until done, 403 for a forged
 * signature, 410 once expired), and the files' removal: by the cron after 24 hours, and at once
 * when an erasure completes after them.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { removeDueExportFiles } from "../src/export/export-file-removal";
import { downloadUrl } from "../src/export/download-signature";
import { runScheduledMaintenance } from "../src/maintenance/scheduled";
import { type Run, createRun, deleteByMetadata, postTraces } from "./deletion-fixtures";
import { call } from "./support/client";
import { type Tenant, addUser, createTenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();

let admin: Tenant;
let member: Tenant;
let otherMember: Tenant;
let stranger: Tenant;
let big: Run;
let small: Run;

/** 60 KB of input per trace: 100 traces (a page, a queue message) are more than one 5 MiB part. */
const LARGE_INPUT = "x".repeat(60_000);

beforeAll(async () => {
  admin = await createTenant("admin");
  member = await addUser(admin, "member");
  otherMember = await addUser(admin, "member");
  stranger = await createTenant("admin");
  big = await createRun(admin);
  small = await createRun(admin);
  for (let batch = 0; batch < 10; batch++) {
    await postTraces(
      admin,
      big,
      Array.from({ length: 25 }, (_, i) => ({
        id: uuid(),
        name: `t${batch}-${i}`,
        input: LARGE_INPUT,
        output: "a",
        user_metadata: { team: "x" },
        spans: [{ id: uuid(), type: "llm", name: "l", input: "q", output: "a" }],
      })),
    );
  }
  await postTraces(
    admin,
    small,
    Array.from({ length: 30 }, (_, i) => ({ id: uuid(), name: `s${i}`, input: "q", output: "a", redacted_input: "[R]", user_metadata: i === 0 ? { person: "p-1" } : {} })),
  );
}, 120_000);

function queueExport(tenant: Tenant, run: Run, body: Record<string, unknown>) {
  return call(`/v2/projects/${run.projectId}/export_records/url`, { as: tenant, body: { log_stream_id: run.logStreamId, ...body } });
}

function streamExport(tenant: Tenant, run: Run, body: Record<string, unknown>) {
  return call(`/v2/projects/${run.projectId}/export_records`, { as: tenant, body: { log_stream_id: run.logStreamId, ...body } });
}

/** The URL as a path of the test worker (the answer's origin is the test's). */
const pathOf = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
};

async function waitForExport(tenant: Tenant, jobId: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await call(`/v2/org-jobs/${jobId}`, { as: tenant });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    if (answer.body.status === "completed" || answer.body.status === "failed") return answer.body;
    if (Date.now() > deadline) throw new Error(`export ${jobId} still ${answer.body.status}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A body as text (the test client parses a JSON body: put it back). */
const text = (body: unknown) => (typeof body === "string" ? body : `${JSON.stringify(body)}\n`);

describe("a large export across queue messages", () => {
  it("writes the same bytes as the streamed export, in equal 5 MiB parts, and a member follows it", async () => {
    const body = { root_type: "trace", export_format: "jsonl_flat", file_name: "big.jsonl" };
    const queued = await queueExport(member, big, body);
    expect(queued.status, JSON.stringify(queued.body)).toBe(200);
    const { url, url_expires_at, file_name, content_type, job_id } = queued.body;
    expect(file_name).toBe("big.jsonl");
    expect(content_type).toBe("application/x-ndjson");
    const lifetime = Date.parse(url_expires_at) - Date.now();
    expect(lifetime).toBeGreaterThan(23.9 * 3600_000);
    expect(lifetime).toBeLessThanOrEqual(24 * 3600_000);

    // Not done yet: 409 with Retry-After (three pages, one message each, a second apart at least).
    const early = await call(pathOf(url));
    expect(early.status, JSON.stringify(early.body)).toBe(409);
    expect(Number(early.headers.get("retry-after"))).toBeGreaterThan(0);

    const job = await waitForExport(member, job_id);
    expect(job.status, job.error_message).toBe("completed");
    expect(job.job_name).toBe("export_records");
    expect(job.request_data).toMatchObject({ project_id: big.projectId, root_type: "trace", export_format: "jsonl_flat" });
    const streamed = await streamExport(member, big, body);
    expect(streamed.status).toBe(200);
    const expected = text(streamed.body);
    expect(job.progress).toEqual({ records_exported: 500, bytes_written: new TextEncoder().encode(expected).byteLength });
    expect(job.progress.bytes_written).toBeGreaterThan(10 * 1024 * 1024);

    // No credentials: the signature is one.
    const download = await call(pathOf(url));
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("application/x-ndjson");
    expect(download.headers.get("content-disposition")).toBe('attachment; filename="big.jsonl"');
    expect(text(download.body)).toBe(expected);

    // Three parts (two full ones and the rest), and no partial part left behind.
    const listed = await env.EXPORTS.list({ prefix: `exports/${admin.organizationId}/${job_id}` });
    expect(listed.objects.map((o) => o.key)).toEqual([`exports/${admin.organizationId}/${job_id}.jsonl`]);
    expect(listed.objects[0]!.etag).toMatch(/-3$/);
  }, 120_000);
});

describe("a sorted export across queue messages", () => {
  it("continues the sort's keyset between messages: every root once, in the streamed export's order", async () => {
    // Every trace has the same team: the whole export is one tie, broken by id, across pages.
    for (const ascending of [true, false]) {
      const body = { root_type: "trace", export_format: "csv", column_ids: ["id", "name"], sort: { column_id: "user_metadata.team", ascending } };
      const queued = await queueExport(admin, big, body);
      expect(queued.status, JSON.stringify(queued.body)).toBe(200);
      const job = await waitForExport(admin, queued.body.job_id);
      expect(job.status, job.error_message).toBe("completed");
      const download = await call(pathOf(queued.body.url));
      expect(download.status).toBe(200);
      const streamed = await streamExport(admin, big, body);
      expect(streamed.status).toBe(200);
      expect(text(download.body)).toBe(text(streamed.body));
      const ids = text(download.body).split("\n").slice(1).filter(Boolean).map((line) => line.split(",")[0]!);
      expect(ids).toHaveLength(250);
      expect(new Set(ids).size).toBe(250);
      const byId = [...ids].sort();
      expect(ids).toEqual(ascending ? byId : byId.reverse());
    }
  }, 120_000);
});

describe("a small export", () => {
  it("is one object, csv with the streamed export's header and rows, redacted", async () => {
    const body = { root_type: "trace", export_format: "csv", column_ids: ["id", "name", "input"] };
    const queued = await queueExport(admin, small, body);
    expect(queued.status).toBe(200);
    expect(queued.body.file_name).toBe("traces-export.csv");
    const job = await waitForExport(admin, queued.body.job_id);
    expect(job.status).toBe("completed");
    const download = await call(pathOf(queued.body.url));
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    const streamed = await streamExport(admin, small, body);
    expect(download.body).toBe(streamed.body);
    expect(String(download.body).split("\n")[1]).toContain("[R]");
  });

  it("refuses what the streamed export refuses, before queueing anything", async () => {
    const unknownColumn = await queueExport(member, small, { root_type: "trace", export_format: "csv", column_ids: ["id", "nope"] });
    expect(unknownColumn.status).toBe(422);
    expect(unknownColumn.body.detail[0].loc).toEqual(["body", "column_ids", 1]);
    const badFormat = await queueExport(member, small, { root_type: "trace", export_format: "parquet" });
    expect(badFormat.status).toBe(422);
    const otherOrg = await queueExport(stranger, small, { root_type: "trace" });
    expect(otherOrg.status).toBe(404);
    const jobs = await env.DB.prepare("SELECT count(*) AS n FROM org_jobs WHERE organization_id = ?1 AND job_name = 'export_records'").bind(stranger.organizationId).first<{ n: number }>();
    expect(jobs!.n).toBe(0);
  });
});

describe("the job and the URL", () => {
  let url: string;
  let jobId: string;

  beforeAll(async () => {
    const queued = await queueExport(member, small, { root_type: "trace" });
    url = queued.body.url;
    jobId = queued.body.job_id;
    await waitForExport(member, jobId);
  });

  it("is readable by its creator and admins, not by other members or organizations", async () => {
    expect((await call(`/v2/org-jobs/${jobId}`, { as: member })).status).toBe(200);
    expect((await call(`/v2/org-jobs/${jobId}`, { as: admin })).status).toBe(200);
    expect((await call(`/v2/org-jobs/${jobId}`, { as: otherMember })).status).toBe(403);
    expect((await call(`/v2/org-jobs/${jobId}`, { as: stranger })).status).toBe(404);
    // Members still read no deletion job, nor the list.
    expect((await call(`/v2/org-jobs`, { as: member })).status).toBe(403);
  });

  it("serves the file only for the signed job and expiry", async () => {
    const parsed = new URL(url);
    const signature = parsed.searchParams.get("signature")!;
    const expires = Number(parsed.searchParams.get("expires"));
    const forged = `${signature.slice(0, -2)}${signature.endsWith("AA") ? "BB" : "AA"}`;
    expect((await call(`/v2/exports/${jobId}/file?expires=${expires}&signature=${forged}`)).status).toBe(403);
    expect((await call(`/v2/exports/${jobId}/file?expires=${expires + 3600}&signature=${signature}`)).status).toBe(403);
    const otherJob = await queueExport(member, small, { root_type: "span" });
    expect((await call(`/v2/exports/${otherJob.body.job_id}/file?expires=${expires}&signature=${signature}`)).status).toBe(403);
    expect((await call(`/v2/exports/${uuid()}/file?expires=${expires}&signature=${signature}`)).status).toBe(404);
    expect((await call(`/v2/exports/${jobId}/file?expires=x&signature=${signature}`)).status).toBe(403);
    // An empty or extra segment is no such export, whatever credentials come with it (the route
    // takes none; a 401 would be an answer it does not declare).
    for (const path of ["/v2/exports//file", `/v2/exports/${jobId}/file/extra`, "/v2/exports/"]) {
      const answer = await call(path, { headers: { "Service-API-Key": "tsk_wrong" } });
      expect(answer.status, path).toBe(404);
      expect(answer.body.detail, path).toMatch(/export/i);
    }
    await waitForExport(member, otherJob.body.job_id);
  });

  it("is in /openapi.json without credentials (the signature is one), with what it answers", async () => {
    const document = (await call("/openapi.json")).body as { paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>> };
    const download = document.paths["/v2/exports/{job_id}/file"]?.get;
    expect(download?.security).toEqual([]);
    expect(Object.keys(download!.responses)).toEqual(expect.arrayContaining(["200", "403", "404", "409", "410"]));
  });

  it("answers 410 once the URL has expired, even with a valid signature", async () => {
    const row = await env.DB.prepare("SELECT object_key FROM export_files WHERE job_id = ?1").bind(jobId).first<{ object_key: string }>();
    const expired = await downloadUrl(env, "http://x", { organizationId: admin.organizationId, jobId, objectKey: row!.object_key, expires: Math.floor(Date.now() / 1000) - 1 });
    expect((await call(pathOf(expired))).status).toBe(410);
  });

  it("is removed by the cron after its 24 hours", async () => {
    const row = await env.DB.prepare("SELECT object_key FROM export_files WHERE job_id = ?1").bind(jobId).first<{ object_key: string }>();
    expect(await env.EXPORTS.head(row!.object_key)).not.toBeNull();
    await env.DB.prepare("UPDATE export_files SET expires_at = ?2 WHERE job_id = ?1").bind(jobId, Date.now() * 1000 - 1).run();
    await runScheduledMaintenance(env);
    expect(await env.EXPORTS.head(row!.object_key)).toBeNull();
    const gone = await call(pathOf(url));
    expect(gone.status).toBe(410);
  });
});

describe("an erasure", () => {
  it("makes the organization's older export files unservable at once and removes them; later ones stay", async () => {
    const before = await queueExport(member, small, { root_type: "trace" });
    await waitForExport(member, before.body.job_id);
    const key = (await env.DB.prepare("SELECT object_key FROM export_files WHERE job_id = ?1").bind(before.body.job_id).first<{ object_key: string }>())!.object_key;
    expect((await call(pathOf(before.body.url))).status).toBe(200);
    const otherOrg = await createRun(stranger);
    await postTraces(stranger, otherOrg, [{ id: uuid(), name: "o", input: "q", output: "a", user_metadata: { person: "p-1" } }]);
    const theirs = await queueExport(stranger, otherOrg, { root_type: "trace" });
    await waitForExport(stranger, theirs.body.job_id);

    const deletion = await deleteByMetadata(admin, { metadata_key: "person", metadata_value: "p-1" }, "?immediate=true");
    expect(deletion.status, JSON.stringify(deletion.body)).toBe(200);
    expect(deletion.body.job_id).toBeNull();

    const refused = await call(pathOf(before.body.url));
    expect(refused.status).toBe(410);
    expect(refused.body.detail).toContain("erased");
    await removeDueExportFiles(env);
    expect(await env.EXPORTS.head(key)).toBeNull();
    // Another organization's export is not theirs to erase.
    expect((await call(pathOf(theirs.body.url))).status).toBe(200);

    const after = await queueExport(member, small, { root_type: "trace" });
    await waitForExport(member, after.body.job_id);
    const served = await call(pathOf(after.body.url));
    expect(served.status).toBe(200);
    expect(text(served.body).split("\n").filter(Boolean)).toHaveLength(29);
  });
});
