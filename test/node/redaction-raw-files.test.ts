/**
 * Redaction in mask mode, checked where it finally matters: the bytes on disk. The real service
 * (`wrangler dev` over a fresh local database) takes planted values through every intake path
 * (batch ingest, a session, streaming spans, a PATCH held before its trace, OTLP/JSON); then every
 * file under miniflare's persist directory (the D1 sqlite files with their WAL, and everything
 * else kept there) and everything the service logged are searched for the planted values. A
 * control value that no detector masks is searched the same way, and must be found: the search
 * itself works.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "./sdk-service";

let service: RunningService;

beforeAll(async () => {
  service = await startService();
}, 300_000);

afterAll(async () => {
  await service?.stop();
});

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

const tag = Date.now().toString(36);
const PLANTED = [
  `planted.${tag}@example.com`,
  "+44 20 7946 0958",
  "4111 1111 1111 1111",
  "DE89 3704 0044 0532 0130 00",
  `sk-proj-${tag}Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z`,
  `hunter-${tag}`,
];
const CONTROL = `control-marker-${tag}`;
const TEXT = `${CONTROL}: mail ${PLANTED[0]}, phone ${PLANTED[1]}, card ${PLANTED[2]}, IBAN ${PLANTED[3]}, key ${PLANTED[4]}, db postgres://app:${PLANTED[5]}@db.internal/x`;

async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${service.origin}${path}`, {
    method,
    headers: { "Service-API-Key": service.tenant.apiKey, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  expect(response.status, `${method} ${path}: ${text}`).toBe(200);
  return text ? (JSON.parse(text) as any) : null;
}

describe("mask mode leaves no planted value on disk or in the logs", () => {
  it("takes planted values through every intake path", { timeout: 300_000 }, async () => {
    const project = await api("POST", "/v2/projects", { name: `redaction-${tag}` });
    const stream = await api("POST", `/v2/projects/${project.id}/log_streams`, { name: "default" });
    await api("PUT", `/v2/projects/${project.id}/redaction`, { enabled: true, mode: "mask", fields: ["input", "output", "user_metadata", "name", "tags"] });
    const run = { log_stream_id: stream.id };
    const session = crypto.randomUUID();
    await api("POST", `/v2/projects/${project.id}/sessions`, { ...run, id: session, name: `session ${PLANTED[0]}` });
    const held = crypto.randomUUID();
    await api("PATCH", `/v2/projects/${project.id}/traces/${held}`, { ...run, output: TEXT, tags: [PLANTED[0]] });
    await api("POST", `/v2/projects/${project.id}/traces`, {
      ...run,
      session_id: session,
      traces: [
        {
          id: crypto.randomUUID(),
          name: `trace ${PLANTED[0]}`,
          input: TEXT,
          output: TEXT,
          tags: [PLANTED[0]],
          user_metadata: { who: PLANTED[0] },
          spans: [
            { id: crypto.randomUUID(), type: "llm", name: "llm", input: [{ role: "user", content: TEXT }], output: { role: "assistant", content: TEXT } },
            { id: crypto.randomUUID(), type: "retriever", name: "docs", input: "q", output: [{ content: TEXT, metadata: { owner: PLANTED[0] } }] },
          ],
        },
      ],
    });
    await api("POST", `/v2/projects/${project.id}/traces`, { ...run, traces: [{ id: held, name: "held", input: "later" }] });
    const streamed = crypto.randomUUID();
    const span = crypto.randomUUID();
    await api("POST", `/v2/projects/${project.id}/spans`, { ...run, trace_id: streamed, parent_id: streamed, spans: [{ id: span, type: "tool", name: "t", input: TEXT }] });
    await api("PATCH", `/v2/projects/${project.id}/spans/${span}`, { ...run, output: TEXT });
    const hex = (n: number) => [...crypto.getRandomValues(new Uint8Array(n))].map((b) => b.toString(16).padStart(2, "0")).join("");
    const otlp = {
      resourceSpans: [
        {
          resource: { attributes: [{ key: "service.name", value: { stringValue: "app" } }] },
          scopeSpans: [
            {
              spans: [
                {
                  traceId: hex(16),
                  spanId: hex(8),
                  name: "otel",
                  startTimeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
                  endTimeUnixNano: String(BigInt(Date.now() + 5) * 1_000_000n),
                  attributes: [
                    { key: "input.value", value: { stringValue: TEXT } },
                    { key: "output.value", value: { stringValue: TEXT } },
                    { key: "metadata.who", value: { stringValue: PLANTED[0] } },
                  ],
                },
              ],
            },
          ],
        },
      ],
    };
    const answer = await fetch(`${service.origin}/otel/v1/traces`, {
      method: "POST",
      headers: { Authorization: `Bearer ${service.tenant.apiKey}`, "content-type": "application/json", project: project.id, logstream: "default" },
      body: JSON.stringify(otlp),
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({});
    // A search by a planted value (the text index) finds nothing; the error path of a bad filter echoes nothing stored.
    const search = await api("POST", `/v2/projects/${project.id}/traces/search`, { ...run, filters: [{ column_id: "input", operator: "contains", value: PLANTED[2], type: "text" }] });
    expect(search.records).toEqual([]);
  });

  it("finds the control value on disk, and no planted value in any file or log line", { timeout: 120_000 }, async () => {
    const files = await filesUnder(service.persistDir);
    expect(files.some((f) => f.endsWith(".sqlite"))).toBe(true);
    let controlSeen = false;
    const found: string[] = [];
    for (const file of files) {
      const bytes = await readFile(file);
      if (bytes.includes(CONTROL)) controlSeen = true;
      for (const value of PLANTED) if (bytes.includes(value)) found.push(`${value} in ${file}`);
    }
    expect(controlSeen, "the control value is on disk (the search works)").toBe(true);
    expect(found).toEqual([]);
    const log = service.output();
    for (const value of PLANTED) expect(log.includes(value), `${value} in the service's output`).toBe(false);
  });
});
