/**
 * The `galileo` SDK's export call (`exportRecords`, which POSTs export_records and parses the
 * streamed lines) against the real service under `wrangler dev` (test/node/sdk-service.ts),
 * configured only as a user would: GALILEO_API_URL and GALILEO_API_KEY.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "./sdk-service";

let service: RunningService;
let galileo: typeof import("galileo");
let projectId: string;
let logStreamId: string;
const traceIds = Array.from({ length: 150 }, () => crypto.randomUUID());

async function post(path: string, body: unknown) {
  const response = await fetch(`${service.apiUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "Service-API-Key": service.tenant.apiKey },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return JSON.parse(text) as Record<string, any>;
}

beforeAll(async () => {
  service = await startService();
  process.env.GALILEO_API_URL = service.apiUrl;
  process.env.GALILEO_API_KEY = service.tenant.apiKey;
  galileo = await import("galileo");
  projectId = (await post("/projects", { name: `sdk-export-${Date.now().toString(36)}` })).id;
  logStreamId = (await post(`/projects/${projectId}/log_streams`, { name: "default" })).id;
  await post(`/projects/${projectId}/traces`, {
    log_stream_id: logStreamId,
    traces: traceIds.map((id, i) => ({
      id,
      name: `t${i}`,
      input: "q",
      output: "a",
      redacted_output: "[REDACTED]",
      spans: [{ id: crypto.randomUUID(), type: "llm", name: "l", input: [{ role: "user", content: "q" }], output: { role: "assistant", content: "a" } }],
    })),
  });
}, 400_000);

afterAll(async () => {
  await service?.stop();
});

describe("the galileo SDK's exportRecords", () => {
  it("jsonl: every trace once, spans nested, redacted by default, newest first", async () => {
    const lines: string[] = [];
    for await (const line of await galileo.exportRecords({ projectId, logStreamId, rootType: "trace" as never, exportFormat: "jsonl" as never })) lines.push(String(line));
    const records = lines.map((l) => JSON.parse(l));
    expect(records.map((r) => r.id).sort()).toEqual([...traceIds].sort());
    expect(records[0].spans[0]).toMatchObject({ type: "llm" });
    expect(records[0].output).toBe("[REDACTED]");
    const created = records.map((r) => Date.parse(r.created_at));
    expect(created).toEqual([...created].sort((a, b) => b - a));
  });

  it("csv: a header then one row per trace, with the chosen columns", async () => {
    const rows: string[] = [];
    for await (const row of await galileo.exportRecords({ projectId, logStreamId, rootType: "trace" as never, exportFormat: "csv" as never, columnIds: ["id", "name"] })) rows.push(String(row));
    expect(rows[0]).toBe("id,name\n");
    expect(rows.slice(1).map((r) => r.split(",")[0]).sort()).toEqual([...traceIds].sort());
  });
});
