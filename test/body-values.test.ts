/**
 * Work before validation is bounded by counts as well as bytes (issue 19, points 1 and 4; contract
 * section 12): a JSON body is refused past its route's count of values, an OTLP body past its
 * spans or entries, counted on the wire before objects are built (413, "split the batch"); a full
 * batch of the galileo SDK fits; OTLP/JSON ids that are not hex are a 400, as the Collector says.
 * The memory these caps bound is measured in test/node/body-memory.test.ts.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { SELF } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { createRoute, z } from "@hono/zod-openapi";
import { bodyLimitFor } from "../src/http/body-limits";
import { FULL_REPORT_VALUES } from "../src/http/bounded-body";
import { createRouter } from "../src/http/create-router";
import { jsonShape, nestsDeeperThan } from "../src/http/json-shape";
import { StatusSchema } from "../src/otlp/generated/google/rpc/status_pb";
import { OTLP_LIMITS } from "../src/otlp/otlp-limits";
import { countWire } from "../src/otlp/wire-counts";
import { call } from "./support/client";
import { exportRequest, gzip, jsonBody, otlpSpan, postOtlp, protobufBody, randomHex } from "./support/otlp-requests";
import { type Tenant, createTenant } from "./support/tenants";

const INGEST = bodyLimitFor("POST", "/v2/projects/:project_id/traces");
const encode = (text: string) => new TextEncoder().encode(text);
const repeat = (item: string, n: number) => new Array(n).fill(item).join(",");

let tenant: Tenant;
let projectId: string;
let logStreamId: string;

beforeAll(async () => {
  tenant = await createTenant();
  projectId = (await call("/v2/projects", { as: tenant, body: { name: "values" } })).body.id;
  logStreamId = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "ls" } })).body.id;
});

async function ingest(body: string) {
  const response = await SELF.fetch(`http://trace-store.test/v2/projects/${projectId}/traces`, {
    method: "POST",
    headers: { "content-type": "application/json", "Service-API-Key": tenant.apiKey },
    body,
  });
  return { status: response.status, body: (await response.json()) as any };
}

describe("counting JSON values on the bytes", () => {
  it("counts every value but member names, at any depth, and the nesting", () => {
    expect(jsonShape(encode('{"a": [1, -2.5e3, "x", true, false, null, {}, []], "b": {"c": "d"}}'), 100, 10)).toEqual({ values: 12, depth: 3 });
    // Escaped quotes and punctuation inside strings are text, not structure.
    expect(jsonShape(encode('["a\\"b,[{", "\\\\", "漢字"]'), 100, 10)).toEqual({ values: 4, depth: 1 });
    expect(jsonShape(encode("[[[[]]]]"), 100, 3)).toMatchObject({ over: "depth" });
    expect(jsonShape(encode(`[${repeat("{}", 50)}]`), 50, 10)).toMatchObject({ over: "values", values: 51 });
  });

  it("finds each string's end by its run of backslashes: an odd run escapes the quote, an even one does not", () => {
    expect(jsonShape(encode(JSON.stringify(["\\", '\\"]', 1])), 100, 10)).toEqual({ values: 4, depth: 1 });
    expect(jsonShape(encode(JSON.stringify({ "k\\": "\\\\\\", '\\"': [true] })), 100, 10)).toEqual({ values: 4, depth: 2 });
    // An unterminated string runs to the end: what it holds is never taken for structure.
    expect(jsonShape(encode('["abc\\", [[[[[['), 100, 3)).toEqual({ values: 2, depth: 1 });
  });

  it("counts what JSON.parse builds, for any JSON text, as bytes and as a string", () => {
    const built = (value: unknown): { values: number; depth: number } => {
      if (value === null || typeof value !== "object") return { values: 1, depth: 0 };
      const children = Object.values(value).map(built);
      return { values: 1 + children.reduce((n, c) => n + c.values, 0), depth: 1 + Math.max(0, ...children.map((c) => c.depth)) };
    };
    fc.assert(
      fc.property(fc.json({ maxDepth: 6 }), (text) => {
        const expected = built(JSON.parse(text));
        expect(jsonShape(encode(text), Number.POSITIVE_INFINITY, 1_000)).toEqual(expected);
        expect(jsonShape(text, Number.POSITIVE_INFINITY, 1_000)).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  it("nestsDeeperThan: exactly at the bracket count that can pass the depth, and brackets inside strings are text", () => {
    const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
    expect(nestsDeeperThan(nested(512), 512)).toBe(false);
    expect(nestsDeeperThan(nested(513), 512)).toBe(true);
    expect(nestsDeeperThan(`{"a":${"[".repeat(513)}`, 512)).toBe(true); // cut short: still too deep
    expect(nestsDeeperThan(JSON.stringify("[{".repeat(600)), 512)).toBe(false);
    expect(nestsDeeperThan(`[${repeat("[]", 600)}]`, 512)).toBe(false);
  });
});

describe("a JSON body past its route's count of values", () => {
  it("is a 413 that says to split the batch, before the records are counted", async () => {
    const body = `{"log_stream_id": "${logStreamId}", "traces": [${repeat("{}", INGEST.values)}]}`;
    expect(body.length).toBeLessThan(INGEST.bytes);
    const response = await ingest(body);
    expect(response.status).toBe(413);
    expect(response.body.detail).toContain(`at most ${INGEST.values} JSON values`);
    expect(response.body.detail).toContain("Split the batch");
  });

  it("an invalid body of many values is a 422 from its first faults, never a 500", async () => {
    // 250,000 wrong tags: zod would keep 250,000 issues (300 MB) and overflow its stack.
    const body = `{"log_stream_id": "${logStreamId}", "traces": [{"name": "t", "tags": [${repeat("1", 250_000)}]}]}`;
    const response = await ingest(body);
    expect(response.status).toBe(422);
    expect(response.body.detail.length).toBeLessThan(10);
    expect(response.body.detail[0]).toMatchObject({ loc: ["body", "traces", 0, "tags", 0], type: "string_type" });
  });

  it("a valid body of many values is validated once: the route's validator takes the early validation's result", async () => {
    let validations = 0;
    const schema = z.object({ traces: z.array(z.object({ tags: z.array(z.string()) })) }).superRefine(() => {
      validations += 1;
    });
    const router = createRouter();
    const route = createRoute({
      method: "post",
      path: "/v2/projects/{project_id}/traces",
      request: { params: z.object({ project_id: z.string() }), body: { content: { "application/json": { schema } }, required: true } },
      responses: { 200: { description: "the count of traces" } },
    });
    router.openapi(route, (c) => c.json({ traces: c.req.valid("json").traces.length }, 200));
    const body = JSON.stringify({ traces: [{ tags: Array.from({ length: FULL_REPORT_VALUES }, (_, i) => `t${i}`) }, { tags: [] }] });
    expect(jsonShape(encode(body), INGEST.values, 512).values).toBeGreaterThan(FULL_REPORT_VALUES);
    const response = await router.request("/v2/projects/p/traces", { method: "POST", headers: { "content-type": "application/json" }, body });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ traces: 2 });
    expect(validations).toBe(1);
    // The same schema with an invalid body: answered from the early validation, as before.
    const invalid = JSON.stringify({ traces: [{ tags: Array.from({ length: FULL_REPORT_VALUES }, () => 1) }] });
    const refused = await router.request("/v2/projects/p/traces", { method: "POST", headers: { "content-type": "application/json" }, body: invalid });
    expect(refused.status).toBe(422);
    expect(((await refused.json()) as any).detail[0]).toMatchObject({ loc: ["body", "traces", 0, "tags", 0], type: "string_type" });
  });

  it("a small invalid body still lists every fault", async () => {
    const response = await ingest(`{"log_stream_id": "${logStreamId}", "traces": [{"name": "t", "tags": [1, 2, 3]}]}`);
    expect(response.status).toBe(422);
    expect(response.body.detail.map((d: any) => d.loc.at(-1))).toEqual([0, 1, 2]);
    expect(FULL_REPORT_VALUES).toBeGreaterThan(3);
  });

  it("a full batch as the galileo SDK sends it fits: 10,000 records with messages, metadata and metrics", async () => {
    // flush()'s body (test/sdk-wire-format.test.ts), 5,000 traces of one LLM span each.
    const traces = Array.from({ length: 5_000 }, (_, i) => ({
      type: "trace",
      input: "hello",
      output: "final",
      name: `trace-${i}`,
      created_at: "2026-11-22T05:35:02.426Z",
      user_metadata: { env: "test", customer: "acme", run: String(i) },
      tags: ["t1", "batch"],
      metrics: { duration_ns: 999 },
      dataset_metadata: {},
      id: crypto.randomUUID(),
      spans: [
        {
          type: "llm",
          input: [
            { content: "you are helpful", role: "system" },
            { content: "hi", role: "user" },
          ],
          output: { content: "yo", role: "assistant" },
          name: "llm",
          created_at: "2026-11-22T05:35:02.429Z",
          user_metadata: { k: "v" },
          tags: ["llm"],
          metrics: { duration_ns: 100, num_input_tokens: 3, num_output_tokens: 4, num_total_tokens: 7 },
          dataset_metadata: {},
          id: crypto.randomUUID(),
          model: "gpt-x",
          temperature: 0.3,
        },
      ],
    }));
    const body = JSON.stringify({ log_stream_id: logStreamId, experiment_id: null, reliable: true, traces, is_complete: true, include_trace_ids: false });
    const shape = jsonShape(encode(body), INGEST.values, 512);
    expect(shape.over).toBeUndefined();
    expect(shape.values).toBeGreaterThan(FULL_REPORT_VALUES);
    const response = await ingest(body);
    expect(response.status, JSON.stringify(response.body).slice(0, 300)).toBe(200);
    expect(response.body.traces_count).toBe(5_000);
  }, 120_000);
});

describe("OTLP bodies past their counts", () => {
  const headers = () => ({ Authorization: `Bearer ${tenant.apiKey}`, project: "otlp-values" });
  const statusOf = async (response: Response) => fromBinary(StatusSchema, new Uint8Array(await response.arrayBuffer()));

  it("10 KB of gzip that inflates to millions of empty spans is a 413 counted on the wire", async () => {
    // resource_spans { scope_spans { spans {} spans {} ... } }: 4 million empty spans in 8 MB.
    const body = nested([1, 2], repeated(0x12, 4_000_000));
    expect(countWire(body, OTLP_LIMITS.maxSpansPerRequest, OTLP_LIMITS.maxEntriesPerRequest)).toMatchObject({ over: "spans", spans: OTLP_LIMITS.maxSpansPerRequest + 1 });
    const compressed = await gzip(body);
    expect(compressed.length).toBeLessThan(50_000);
    const response = await postOtlp(compressed, { headers: { ...headers(), "Content-Encoding": "gzip" } });
    expect(response.status).toBe(413);
    expect((await statusOf(response)).message).toMatch(/more than 10000 spans.*split the batch/);
  });

  it("one span with a million empty attributes, or a million empty resource groups, is a 413 too", async () => {
    // resource_spans { scope_spans { spans { attributes {} attributes {} ... } } }
    const attributes = nested([1, 2, 2], repeated(0x4a, 1_000_000));
    expect(countWire(attributes, OTLP_LIMITS.maxSpansPerRequest, OTLP_LIMITS.maxEntriesPerRequest)).toMatchObject({ over: "entries", spans: 1 });
    const response = await postOtlp(attributes, { headers: headers() });
    expect(response.status).toBe(413);
    expect((await statusOf(response)).message).toMatch(/attributes, events and links/);
    // resource_spans {} resource_spans {} ...: no span at all, millions of objects all the same.
    expect((await postOtlp(repeated(0x0a, 1_000_000), { headers: headers() })).status).toBe(413);
  }, 30_000);

  it("OTLP/JSON past its count of values is a 413", async () => {
    const body = `{"resourceSpans": [${repeat("{}", OTLP_LIMITS.maxJsonValues)}]}`;
    const response = await postOtlp(body, { contentType: "application/json", headers: headers() });
    expect(response.status).toBe(413);
    expect(((await response.json()) as any).message).toMatch(/JSON values.*split the batch/);
  });
});

/** `count` empty fields of tag byte `tag`. */
function repeated(tag: number, count: number): Uint8Array {
  const bytes = new Uint8Array(2 * count);
  for (let i = 0; i < bytes.length; i += 2) bytes[i] = tag;
  return bytes;
}

/** `inner` wrapped in one message per field number of `path`, outermost first. */
function nested(path: number[], inner: Uint8Array): Uint8Array {
  let bytes = inner;
  for (const field of [...path].reverse()) {
    const header = [(field << 3) | 2, ...varint(bytes.length)];
    const wrapped = new Uint8Array(header.length + bytes.length);
    wrapped.set(header);
    wrapped.set(bytes, header.length);
    bytes = wrapped;
  }
  return bytes;
}

function varint(value: number): number[] {
  const bytes: number[] = [];
  while (value >= 0x80) {
    bytes.push((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  bytes.push(value);
  return bytes;
}

describe("OTLP/JSON ids", () => {
  const headers = () => ({ Authorization: `Bearer ${tenant.apiKey}`, project: "otlp-ids" });

  it("an id that is not hex of the right length is a 400, as the Collector answers; nothing is stored", async () => {
    const good = otlpSpan({ trace: randomHex(16), span: randomHex(8) });
    const request = JSON.parse(jsonBody(exportRequest([good])));
    const span = request.resourceSpans[0].scopeSpans[0].spans[0];
    for (const [key, value] of [
      ["traceId", "not-hex-at-all"],
      ["spanId", randomHex(4)],
      ["traceId", btoa("0123456789abcdef")],
      ["parentSpanId", "zz".repeat(8)],
    ] as const) {
      const response = await postOtlp(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ ...span, [key]: value }] }] }] }), {
        contentType: "application/json",
        headers: headers(),
      });
      expect(response.status, `${key}=${value}`).toBe(400);
      const status = (await response.json()) as any;
      expect(status).toMatchObject({ code: 3 });
      expect(status.message).toContain(`spans[0].${key}`);
    }
    const project = (await call(`/v2/projects?project_name=otlp-ids`, { as: tenant })).body[0];
    expect(project).toBeUndefined();
  });

  it("a span that decodes but cannot be stored stays in partial_success", async () => {
    const good = otlpSpan({ trace: randomHex(16), span: randomHex(8) });
    const zero = otlpSpan({ trace: randomHex(16), span: "0000000000000000" });
    const response = await postOtlp(jsonBody(exportRequest([good, zero])), { contentType: "application/json", headers: headers() });
    expect(response.status).toBe(200);
    expect(((await response.json()) as any).partialSuccess).toMatchObject({ rejectedSpans: "1" });
  });
});
