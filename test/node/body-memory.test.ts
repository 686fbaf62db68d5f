/**
 * The heap the worst bodies of each route class take at their caps (issue 19, point 1), measured
 * in Node's V8 (workerd's is the same engine, but its heap cannot be read from a test) while the
 * service's own code handles them: the value count on the bytes (src/http/json-shape.ts), then
 * JSON.parse and the route's zod schema as src/http/bounded-body.ts runs them (abortEarly past
 * FULL_REPORT_VALUES), and for OTLP the wire count, the decoder and the export plan. Each must
 * stay well within an isolate's 128 MB; docs/limits.md gives the figures (printed here).
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { bodyLimitFor } from "../../src/http/body-limits";
import { FULL_REPORT_VALUES, MAX_JSON_DEPTH } from "../../src/http/bounded-body";
import { jsonShape } from "../../src/http/json-shape";
import { IngestTracesRequest } from "../../src/ingest/ingest-schemas";
import { decodeExportRequest } from "../../src/otlp/decode-request";
import { OTLP_LIMITS } from "../../src/otlp/otlp-limits";
import { planExport } from "../../src/otlp/plan-export";
import { FullSearchRequestSchema } from "../../src/search/search-schemas";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const MB = 1e6;
/** What one request may hold live: an isolate has 128 MB, shared with other requests. */
const BUDGET = 64 * MB;
const repeat = (item: string, n: number) => new Array(n).fill(item).join(",");
const encode = (text: string) => new TextEncoder().encode(text);

/** Peak heap growth while `work` runs (sampled at each step it reports), the body itself excluded. */
async function peakOf(work: (sample: () => void) => Promise<unknown> | unknown): Promise<number> {
  gc();
  const before = process.memoryUsage().heapUsed;
  let peak = 0;
  const sample = () => {
    peak = Math.max(peak, process.memoryUsage().heapUsed - before);
  };
  const result = await work(sample);
  sample();
  expect(result).toBeDefined();
  return peak;
}

/** As bounded-body.ts handles a JSON body: count, refuse or parse, then validate. */
function handleJson(bytes: Uint8Array, route: string, schema: { safeParse(v: unknown, p?: object): unknown }, sample: () => void): unknown {
  const limit = bodyLimitFor("POST", route);
  const shape = jsonShape(bytes, limit.values, MAX_JSON_DEPTH);
  sample();
  if (shape.over) return shape;
  const parsed = JSON.parse(new TextDecoder().decode(bytes));
  sample();
  const result = schema.safeParse(parsed, shape.values > FULL_REPORT_VALUES ? { abortEarly: true } : undefined);
  sample();
  return result;
}

const figures: string[] = [];

describe("peak heap of the worst bodies at each route's caps", () => {
  const ingest = bodyLimitFor("POST", "/v2/projects/:project_id/traces");
  const search = bodyLimitFor("POST", "/v2/projects/:project_id/spans/search");

  const jsonCases: [string, string, { safeParse(v: unknown, p?: object): unknown }, string][] = [
    ["ingest: empty records up to the value cap", "/v2/projects/:project_id/traces", IngestTracesRequest, `{"traces": [${repeat("{}", ingest.values - 2)}]}`],
    ["ingest: one value past the cap (refused on the bytes)", "/v2/projects/:project_id/traces", IngestTracesRequest, `{"traces": [${repeat("{}", ingest.values + 1)}]}`],
    ["ingest: wrong values up to the cap (one issue each)", "/v2/projects/:project_id/traces", IngestTracesRequest, `{"traces": [{"tags": [${repeat("1", ingest.values - 4)}]}]}`],
    ["ingest: 10,000 invalid spans", "/v2/projects/:project_id/traces", IngestTracesRequest, `{"traces": [{"spans": [${repeat('{"type": 1}', 9_999)}]}]}`],
    ["search: empty objects up to the value cap", "/v2/projects/:project_id/spans/search", FullSearchRequestSchema, `{"filters": [${repeat("{}", search.values - 2)}]}`],
  ];

  for (const [name, route, schema, text] of jsonCases) {
    it(name, async () => {
      const bytes = encode(text);
      expect(bytes.length).toBeLessThanOrEqual(bodyLimitFor("POST", route).bytes);
      const peak = await peakOf((sample) => handleJson(bytes, route, schema, sample));
      figures.push(`${name}: ${(bytes.length / MB).toFixed(1)} MB body, peak ${(peak / MB).toFixed(1)} MB`);
      console.log(figures.at(-1));
      expect(peak).toBeLessThan(BUDGET);
    });
  }

  it("OTLP: 10,000 spans of 10 attributes (the caps), protobuf and OTLP/JSON; a body past them refused before decoding", async () => {
    const { create, toBinary, toJson } = await import("@bufbuild/protobuf");
    const { ExportTraceServiceRequestSchema } = await import("../../src/otlp/generated/opentelemetry/proto/collector/trace/v1/trace_service_pb");
    const spans = Array.from({ length: OTLP_LIMITS.maxSpansPerRequest }, (_, i) => ({
      traceId: Uint8Array.from({ length: 16 }, (_, j) => (i + j + 1) % 256),
      spanId: Uint8Array.from({ length: 8 }, (_, j) => (i * 7 + j + 1) % 256),
      name: "s",
      startTimeUnixNano: 1_700_000_000_000_000_000n,
      endTimeUnixNano: 1_700_000_001_000_000_000n,
      attributes: Array.from({ length: 9 }, (_, k) => ({ key: `k${k}`, value: { value: { case: "stringValue" as const, value: "v" } } })),
    }));
    const request = create(ExportTraceServiceRequestSchema, { resourceSpans: [{ scopeSpans: [{ spans }] }] });
    const protobuf = toBinary(ExportTraceServiceRequestSchema, request);
    const json = encode(JSON.stringify(toJson(ExportTraceServiceRequestSchema, request)).replace(/"(traceId|spanId)":"([^"]*)"/g, (_, key, b64) => `"${key}":"${Buffer.from(b64, "base64").toString("hex")}"`));
    for (const [encoding, body] of [["protobuf", protobuf], ["json", json]] as const) {
      expect(body.length).toBeLessThanOrEqual(OTLP_LIMITS.maxBodyBytes);
      const peak = await peakOf(async (sample) => {
        const decoded = decodeExportRequest(body, encoding);
        sample();
        const plan = await planExport(decoded, "11111111-2222-4333-8444-555555555555");
        sample();
        return plan;
      });
      figures.push(`OTLP ${encoding}: 10,000 spans x 10 attributes, ${(body.length / MB).toFixed(1)} MB body, peak ${(peak / MB).toFixed(1)} MB (decode and plan)`);
      console.log(figures.at(-1));
      // 10,000 spans mapped to records are most of it, as for a 10,000-record ingest (docs/limits.md).
      expect(peak).toBeLessThan(96 * MB);
    }
    // 5 million empty spans (10 MB): refused by the wire count, nothing built.
    const emptySpans = new Uint8Array(10 * MB);
    for (let i = 0; i < emptySpans.length; i += 2) emptySpans[i] = 0x12;
    const peak = await peakOf(() => {
      try {
        return decodeExportRequest(emptySpans, "protobuf");
      } catch (error) {
        return error;
      }
    });
    figures.push(`OTLP protobuf: 5 million empty spans, 10 MB body, refused; peak ${(peak / MB).toFixed(1)} MB`);
    // Decoding them would take about a gigabyte. The count itself takes about 14 MB of heap (13.9
    // alone, 16.2 MB after the runs before it in a full suite): 32 MB still tells a refusal from a
    // decode by thirty times.
    expect(peak).toBeLessThan(32 * MB);
    console.log(figures.join("\n"));
  }, 120_000);
});
