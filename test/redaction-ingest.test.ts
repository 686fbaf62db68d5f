/**
 * Redaction at ingest (contract section 14): the policy's API, and the policy applied on every
 * intake path. In `mask` mode planted values must be found in no table of any database (the
 * text index's content, held updates and side tables included); in `shadow` mode the originals
 * stay and the masked copies serve `export_records` with `redact=true`.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type Run, createRun, postSession, postTraces } from "./deletion-fixtures";
import { call } from "./support/client";
import { exportRequest, jsonBody, otlpSpan, postOtlp, randomHex } from "./support/otlp-requests";
import { recordDatabases, recordsOf } from "./support/record-dbs";
import { addUser, createTenant, type Tenant } from "./support/tenants";

const uuid = () => crypto.randomUUID();

let admin: Tenant;
let member: Tenant;
let other: Tenant;

beforeAll(async () => {
  admin = await createTenant("admin");
  member = await addUser(admin, "member");
  other = await createTenant("admin");
});

const putPolicy = (run: Run, policy: Record<string, unknown>, as: Tenant = admin) =>
  call(`/v2/projects/${run.projectId}/redaction`, { as, method: "PUT", body: policy });

/** Every row of every table of every database, as text: where a planted value must not be. */
async function everythingStored(): Promise<string> {
  const parts: string[] = [];
  for (const db of recordDatabases()) {
    const tables = await db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND sql NOT LIKE 'CREATE VIRTUAL%'").all<{ name: string }>();
    for (const { name } of tables.results) {
      const rows = await db.prepare(`SELECT * FROM "${name}"`).all();
      parts.push(JSON.stringify(rows.results));
    }
  }
  return parts.join("\n");
}

/** A fresh set of values that each detector (and the custom pattern) must catch. */
function planted() {
  const tag = randomHex(4);
  return {
    email: `planted.${tag}@example.com`,
    phone: "+44 20 7946 0958",
    card: "4111 1111 1111 1111",
    ssn: "219-09-9999",
    iban: "DE89 3704 0044 0532 0130 00",
    key: `sk-proj-${tag}Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z`,
    employee: `EMP-${String(100000 + Math.floor(Math.random() * 899999))}`,
    password: `hunter-${tag}`,
  };
}

describe("the policy", () => {
  let run: Run;
  beforeAll(async () => {
    run = await createRun(admin);
  });

  it("answers the default until one is set; members read it", async () => {
    const answer = await call(`/v2/projects/${run.projectId}/redaction`, { as: member });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      enabled: false,
      mode: "mask",
      detectors: ["email", "phone", "credit_card", "us_ssn", "iban", "ip_address", "api_key", "jwt", "url_credentials"],
      custom: [],
      fields: ["input", "output", "user_metadata"],
    });
  });

  it("is replaced whole by an admin; a member gets 403, another organization 404", async () => {
    expect((await putPolicy(run, { enabled: true }, member)).status).toBe(403);
    expect((await putPolicy(run, { enabled: true }, other)).status).toBe(404);
    expect((await call(`/v2/projects/${run.projectId}/redaction`, { as: other })).status).toBe(404);
    const put = await putPolicy(run, { enabled: true, mode: "shadow", detectors: ["jwt", "email"], custom: [{ name: "emp", pattern: "EMP-\\d{6}", flags: "i" }] });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ enabled: true, mode: "shadow", detectors: ["email", "jwt"], custom: [{ name: "emp", pattern: "EMP-\\d{6}", flags: "i" }], fields: ["input", "output", "user_metadata"] });
    const again = await putPolicy(run, { enabled: true });
    expect(again.body.detectors).toHaveLength(9);
    expect(again.body.custom).toEqual([]);
    expect((await call(`/v2/projects/${run.projectId}/redaction`, { as: member })).body).toEqual(again.body);
  });

  it("refuses patterns a linear-time engine cannot run, or too long, or with unknown flags (422 naming the pattern)", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ name: "a", pattern: "(a)\\1" }, /backreferences .* not supported: custom patterns run on a linear-time engine/],
      [{ name: "a", pattern: "foo(?=bar)" }, /lookaround .* not supported/],
      [{ name: "a", pattern: "(?<!x)foo" }, /lookaround .* not supported/],
      [{ name: "a", pattern: "[unclosed" }, /not a valid regular expression/],
    ];
    for (const [custom, message] of cases) {
      const answer = await putPolicy(run, { enabled: true, custom: [{ name: "ok", pattern: "x\\d+" }, custom] });
      expect(answer.status, JSON.stringify(custom)).toBe(422);
      expect(answer.body.detail[0].loc).toEqual(["body", "custom", 1, "pattern"]);
      expect(answer.body.detail[0].msg).toMatch(message);
    }
    const long = await putPolicy(run, { custom: [{ name: "long", pattern: "a".repeat(501) }] });
    expect(long.status).toBe(422);
    expect(long.body.detail[0].type).toBe("string_too_long");
    expect((await putPolicy(run, { custom: [{ name: "f", pattern: "a", flags: "g" }] })).status).toBe(422);
    expect((await putPolicy(run, { mode: "hide" })).status).toBe(422);
    expect((await putPolicy(run, { detectors: ["passport"] })).status).toBe(422);
    // Nested quantifiers are fine: the engine never backtracks.
    expect((await putPolicy(run, { enabled: true, custom: [{ name: "nested", pattern: "(a+)+b" }] })).status).toBe(200);
  });

  it("previews a sample text with the policy being edited", async () => {
    const answer = await call(`/v2/projects/${run.projectId}/redaction/preview`, {
      as: member,
      body: { text: "mail jane@example.com, EMP-123456", policy: { detectors: ["email"], custom: [{ name: "emp", pattern: "EMP-\\d{6}" }] } },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ masked: "mail [REDACTED:email], [REDACTED:emp]", changed: true });
  });
});

describe("mask mode: no original is stored by any intake path", () => {
  let run: Run;
  const values = planted();
  const all = () => Object.values(values);
  const text = `Contact ${values.email} or ${values.phone}; card ${values.card}; SSN ${values.ssn}; IBAN ${values.iban}; key ${values.key}; ${values.employee}; db postgres://app:${values.password}@db.internal/x`;
  const traceId = uuid();
  const heldTraceId = uuid();
  const streamedTraceId = uuid();

  beforeAll(async () => {
    run = await createRun(admin);
    const put = await putPolicy(run, {
      enabled: true,
      mode: "mask",
      fields: ["input", "output", "user_metadata", "name", "tags"],
      custom: [{ name: "employee_id", pattern: "EMP-\\d{6}" }],
    });
    expect(put.status).toBe(200);
    const sessionId = uuid();
    await postSession(admin, run, { id: sessionId, name: `session of ${values.email}` });
    await postTraces(admin, run, [
      {
        id: traceId,
        session_id: sessionId,
        name: `trace for ${values.email}`,
        input: text,
        output: JSON.stringify({ answer: text }),
        tags: [values.email, "plain"],
        user_metadata: { customer: values.email, note: text },
        spans: [
          { id: uuid(), type: "llm", name: "llm", input: [{ role: "system", content: "be nice" }, { role: "user", content: text }], output: { role: "assistant", content: text } },
          { id: uuid(), type: "retriever", name: "docs", input: "query", output: [{ content: text, metadata: { owner: values.email } }] },
          { id: uuid(), type: "tool", name: "tool", input: JSON.stringify({ args: { card: values.card } }), output: text },
        ],
      },
    ]);
    // A held update (the PATCH before its trace), then the trace.
    const held = await call(`/v2/projects/${run.projectId}/traces/${heldTraceId}`, { as: admin, method: "PATCH", body: { log_stream_id: run.logStreamId, output: text, tags: [values.email] } });
    expect(held.body.pending).toBe(true);
    const heldRows = await (await recordsOf(run.projectId)).prepare("SELECT * FROM record_patches WHERE record_id = ?").bind(heldTraceId).all();
    expect(JSON.stringify(heldRows.results)).not.toContain(values.email);
    expect(JSON.stringify(heldRows.results)).toContain("[REDACTED:email]");
    await postTraces(admin, run, [{ id: heldTraceId, name: "held", input: "hi" }]);
    // Streaming: a span before its trace, then a PATCH of the span.
    const spanId = uuid();
    const spans = await call(`/v2/projects/${run.projectId}/spans`, {
      as: admin,
      body: { log_stream_id: run.logStreamId, trace_id: streamedTraceId, parent_id: streamedTraceId, spans: [{ id: spanId, type: "tool", name: "t", input: text }] },
    });
    expect(spans.status).toBe(200);
    const patched = await call(`/v2/projects/${run.projectId}/spans/${spanId}`, { as: admin, method: "PATCH", body: { log_stream_id: run.logStreamId, output: text } });
    expect(patched.status).toBe(200);
    // OTLP: attributes that become input, output and metadata.
    const otlp = await postOtlp(
      jsonBody(
        exportRequest([
          otlpSpan({
            trace: randomHex(16),
            span: randomHex(8),
            name: "otel",
            attributes: { "input.value": text, "output.value": text, "metadata.customer": values.email, "gen_ai.prompt.0.content": text },
          }),
        ]),
      ),
      { contentType: "application/json", headers: { Authorization: `Bearer ${admin.apiKey}`, project: run.projectId, logstream: "default" } },
    );
    expect(otlp.status).toBe(200);
    expect(await otlp.json()).toEqual({});
  });

  it("stores placeholders where the values were", async () => {
    const db = await recordsOf(run.projectId);
    const trace = await db.prepare("SELECT input, output, name, tags, user_metadata FROM records WHERE id = ?").bind(traceId).first<Record<string, string>>();
    expect(trace!.input).toBe(
      "Contact [REDACTED:email] or [REDACTED:phone]; card [REDACTED:credit_card]; SSN [REDACTED:us_ssn]; IBAN [REDACTED:iban]; key [REDACTED:api_key]; [REDACTED:employee_id]; db postgres://[REDACTED:url_credentials]@db.internal/x",
    );
    expect(JSON.parse(trace!.output!).answer).toBe(trace!.input);
    expect(trace!.name).toBe("trace for [REDACTED:email]");
    expect(JSON.parse(trace!.tags!)).toEqual(["[REDACTED:email]", "plain"]);
    expect(JSON.parse(trace!.user_metadata!).customer).toBe("[REDACTED:email]");
    const otel = await db.prepare("SELECT count(*) AS n FROM records WHERE project_id = ? AND name = 'otel' AND input LIKE '%[REDACTED:email]%'").bind(run.projectId).first<{ n: number }>();
    expect(otel!.n).toBeGreaterThan(0); // the span, and the trace made of it
  });

  it("leaves no planted value in any table of any database", async () => {
    const stored = await everythingStored();
    expect(stored).toContain("[REDACTED:credit_card]");
    for (const value of all()) expect(stored.includes(value), value).toBe(false);
  });

  it("finds no record by a planted value through the text index, and finds them by placeholder", async () => {
    const search = (value: string) =>
      call(`/v2/projects/${run.projectId}/traces/search`, {
        as: admin,
        body: { log_stream_id: run.logStreamId, filters: [{ column_id: "input", operator: "contains", value, type: "text" }] },
      });
    const byValue = await search(values.email);
    expect(byValue.status).toBe(200);
    expect(byValue.body.records).toEqual([]);
    const byPlaceholder = await search("[REDACTED:employee_id]");
    expect(byPlaceholder.body.records.map((r: { id: string }) => r.id)).toContain(traceId);
  });

  it("turns off for records written after the policy is disabled (same isolate: at once)", async () => {
    expect((await putPolicy(run, { enabled: false })).status).toBe(200);
    const id = uuid();
    await postTraces(admin, run, [{ id, name: "after", input: "mail jane@example.com" }]);
    const row = await (await recordsOf(run.projectId)).prepare("SELECT input FROM records WHERE id = ?").bind(id).first<{ input: string }>();
    expect(row!.input).toBe("mail jane@example.com");
  });
});

describe("shadow mode: originals stored, masked copies beside them", () => {
  let run: Run;
  const values = planted();
  const text = `mail ${values.email}, card ${values.card}`;
  const masked = "mail [REDACTED:email], card [REDACTED:credit_card]";

  beforeAll(async () => {
    run = await createRun(admin);
    expect((await putPolicy(run, { enabled: true, mode: "shadow", fields: ["input", "output", "user_metadata", "name", "tags"] })).status).toBe(200);
  });

  it("keeps input, output, name, tags and metadata as sent, and fills redacted_input/redacted_output", async () => {
    const id = uuid();
    const own = uuid();
    await postTraces(admin, run, [
      { id, name: values.email, input: text, output: text, tags: [values.email], user_metadata: { who: values.email } },
      { id: own, name: "own", input: text, output: text, redacted_input: "client's own" },
    ]);
    const db = await recordsOf(run.projectId);
    const row = await db.prepare("SELECT * FROM records WHERE id = ?").bind(id).first<Record<string, string>>();
    expect([row!.input, row!.output, row!.name]).toEqual([text, text, values.email]);
    expect(JSON.parse(row!.tags!)).toEqual([values.email]);
    expect(JSON.parse(row!.user_metadata!)).toEqual({ who: values.email });
    expect([row!.redacted_input, row!.redacted_output]).toEqual([JSON.stringify(masked), JSON.stringify(masked)]);
    const ownRow = await db.prepare("SELECT redacted_input, redacted_output FROM records WHERE id = ?").bind(own).first<Record<string, string>>();
    expect(ownRow).toEqual({ redacted_input: JSON.stringify("client's own"), redacted_output: JSON.stringify(masked) });

    const exported = await call(`/v2/projects/${run.projectId}/export_records`, { as: member, body: { root_type: "trace", log_stream_id: run.logStreamId, redact: true } });
    expect(exported.status).toBe(200);
    const lines = String(exported.body).trim().split("\n").map((l) => JSON.parse(l) as { id: string; input: string; output: string });
    const line = lines.find((l) => l.id === id)!;
    expect([line.input, line.output]).toEqual([masked, masked]);
  });

  it("gives a held update its masked copy, which reaches the record when it arrives", async () => {
    const id = uuid();
    const held = await call(`/v2/projects/${run.projectId}/traces/${id}`, { as: admin, method: "PATCH", body: { log_stream_id: run.logStreamId, output: text } });
    expect(held.body.pending).toBe(true);
    await postTraces(admin, run, [{ id, name: "late", input: "plain" }]);
    const row = await (await recordsOf(run.projectId)).prepare("SELECT input, output, redacted_input, redacted_output FROM records WHERE id = ?").bind(id).first();
    expect(row).toEqual({ input: "plain", output: text, redacted_input: JSON.stringify("plain"), redacted_output: JSON.stringify(masked) });
  });
});

describe("redaction/apply: masking what was stored before the policy", () => {
  async function waitForJob(jobId: string, timeoutMs = 60_000) {
    const started = Date.now();
    for (;;) {
      const answer = await call(`/v2/org-jobs/${jobId}`, { as: admin });
      expect(answer.status).toBe(200);
      if (answer.body.status === "completed" || answer.body.status === "failed") return answer.body;
      if (Date.now() - started > timeoutMs) throw new Error(`job ${jobId} still ${answer.body.status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it("counts in a dry run, then rewrites records (text index and held updates included) as a job with exact progress", async () => {
    const run = await createRun(admin);
    const values = planted();
    // 230 records (more than two chunks), a third of them with a planted value, plus one outside the range.
    const ids: string[] = [];
    const traces = Array.from({ length: 230 }, (_, i) => {
      const id = uuid();
      ids.push(id);
      return { id, name: `t${i}`, input: i % 3 === 0 ? `mail ${values.email}` : "nothing here", user_metadata: i % 3 === 0 ? { who: values.email } : {}, created_at: "2026-01-01T00:00:00Z" };
    });
    await postTraces(admin, run, traces.slice(0, 115));
    await postTraces(admin, run, traces.slice(115));
    const outside = uuid();
    await postTraces(admin, run, [{ id: outside, name: "outside", input: `mail ${values.email}`, created_at: "2025-06-01T00:00:00Z" }]);
    const heldId = uuid();
    await call(`/v2/projects/${run.projectId}/traces/${heldId}`, { as: admin, method: "PATCH", body: { log_stream_id: run.logStreamId, output: `held ${values.email}` } });

    const apply = (query: string, as: Tenant = admin) =>
      call(`/v2/projects/${run.projectId}/redaction/apply${query}`, { as, body: { start_time: "2025-12-01T00:00:00Z", end_time: "2026-02-01T00:00:00Z" } });
    // The policy is off: nothing would change, and nothing is queued.
    expect((await apply("?dry_run=true")).body).toEqual({ records: 230, would_change: 0, complete: true });
    expect((await apply("")).body.job_id).toBeNull();
    expect((await putPolicy(run, { enabled: true, detectors: ["email"] })).status).toBe(200);
    expect((await apply("?dry_run=true", member)).status).toBe(403);
    const dry = await apply("?dry_run=true");
    expect(dry.status).toBe(200);
    expect(dry.body).toEqual({ records: 230, would_change: 77, complete: true });
    expect(JSON.stringify((await (await recordsOf(run.projectId)).prepare("SELECT input FROM records WHERE id = ?").bind(ids[0]).first())!)).toContain(values.email);

    const queued = await apply("");
    expect(queued.status).toBe(200);
    const job = await waitForJob(queued.body.job_id);
    expect(job).toMatchObject({ job_name: "redact", status: "completed", progress: { records_scanned: 230, records_changed: 77 } });
    expect(job.request_data).toEqual({ project_id: run.projectId, start_time: "2025-12-01T00:00:00Z", end_time: "2026-02-01T00:00:00Z" });

    const db = await recordsOf(run.projectId);
    const first = await db.prepare("SELECT input, user_metadata FROM records WHERE id = ?").bind(ids[0]).first<{ input: string; user_metadata: string }>();
    expect(first).toEqual({ input: "mail [REDACTED:email]", user_metadata: JSON.stringify({ who: "[REDACTED:email]" }) });
    const meta = await db.prepare("SELECT value FROM record_metadata WHERE record_id = ?").bind(ids[0]).first<{ value: string }>();
    expect(meta!.value).toBe("[REDACTED:email]");
    // Outside the range: left as it was.
    expect((await db.prepare("SELECT input FROM records WHERE id = ?").bind(outside).first<{ input: string }>())!.input).toBe(`mail ${values.email}`);
    // The held update is masked too.
    const held = await db.prepare("SELECT output FROM record_patches WHERE record_id = ?").bind(heldId).first<{ output: string }>();
    expect(held!.output).toBe("held [REDACTED:email]");
    // The text index no longer finds the value in the range (only the record outside it).
    const search = await call(`/v2/projects/${run.projectId}/traces/search`, {
      as: admin,
      body: { log_stream_id: run.logStreamId, filters: [{ column_id: "input", operator: "contains", value: values.email, type: "text" }] },
    });
    expect(search.body.records.map((r: { id: string }) => r.id)).toEqual([outside]);
    // Applying again changes nothing more.
    const again = await waitForJob((await apply("")).body.job_id);
    expect(again.progress).toEqual({ records_scanned: 230, records_changed: 0 });
  });
});
