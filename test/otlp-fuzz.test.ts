/**
 * Never a 500 past the envelope (issue 19, point 3): spans whose attributes hold values of every
 * AnyValue type, under the keys the mapping reads, with JSON-looking text nested at any depth,
 * are exported and then searched; neither the export nor the search that returns what was stored
 * may answer 5xx. (test/otlp-routes.test.ts fuzzes the envelope: random bytes and JSON.)
 */
import { create } from "@bufbuild/protobuf";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { type AnyValue, AnyValueSchema, type KeyValue, KeyValueSchema } from "../src/otlp/generated/opentelemetry/proto/common/v1/common_pb";
import { call } from "./support/client";
import { exportRequest, jsonBody, otlpSpan, postOtlp, protobufBody, randomHex } from "./support/otlp-requests";
import { type Tenant, createTenant } from "./support/tenants";

let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant();
});

const deep = (depth: number, open = "[", close = "]") => `${open.repeat(depth)}${close.repeat(depth)}`;
const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

/** Keys the mapping reads (docs/otlp.md "Mapping"), and a few it leaves to user_metadata. */
const KEYS = [
  "gen_ai.operation.name",
  "openinference.span.kind",
  "traceloop.span.kind",
  "gen_ai.input.messages",
  "gen_ai.output.messages",
  "gen_ai.system_instructions",
  "gen_ai.tool.definitions",
  "gen_ai.tool.call.arguments",
  "gen_ai.tool.call.result",
  "gen_ai.retrieval.documents",
  "gen_ai.response.finish_reasons",
  "gen_ai.usage.input_tokens",
  "input.value",
  "output.value",
  "input.mime_type",
  "metadata",
  "tag.tags",
  "llm.invocation_parameters",
  "llm.input_messages.0.message.content",
  "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
  "llm.tools.0.tool.json_schema",
  "retrieval.documents.0.document.metadata",
  "traceloop.entity.input",
  "traceloop.entity.output",
  "session.id",
  "custom.key",
];

const KIND_VALUES = ["chat", "LLM", "TOOL", "RETRIEVER", "AGENT", "tool", "workflow", "execute_tool", "embeddings"];

/** Strings that look like JSON, nested far deeper than anything walks recursively. */
const jsonLooking = fc.oneof(
  fc.integer({ min: 1, max: 8_000 }).map((d) => deep(d)),
  fc.integer({ min: 1, max: 8_000 }).map(deepObject),
  fc.jsonValue({ maxDepth: 5 }).map((v) => JSON.stringify(v)),
  fc.constantFrom('[{"role":"user","parts":[{"type":"text","content":"hi"}]}]', "[1,", "{", "[]", "{}", "null"),
);

const anyValue: fc.Arbitrary<AnyValue> = fc.letrec<{ value: AnyValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.oneof(fc.string(), jsonLooking, fc.constantFrom(...KIND_VALUES)).map((value) => create(AnyValueSchema, { value: { case: "stringValue", value } })),
    fc.boolean().map((value) => create(AnyValueSchema, { value: { case: "boolValue", value } })),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((value) => create(AnyValueSchema, { value: { case: "intValue", value } })),
    fc.double().map((value) => create(AnyValueSchema, { value: { case: "doubleValue", value } })),
    fc.uint8Array({ maxLength: 16 }).map((value) => create(AnyValueSchema, { value: { case: "bytesValue", value } })),
    fc.array(tie("value"), { maxLength: 3 }).map((values) => create(AnyValueSchema, { value: { case: "arrayValue", value: { values } } })),
    fc
      .array(fc.tuple(fc.oneof(fc.constantFrom("role", "content", "parts", "type", "text", "id", "name", "arguments"), fc.string()), tie("value")), { maxLength: 3 })
      .map((entries) => create(AnyValueSchema, { value: { case: "kvlistValue", value: { values: entries.map(([key, value]) => create(KeyValueSchema, { key, value })) } } })),
    fc.constant(create(AnyValueSchema, {})),
  ),
})).value;

const attributes: fc.Arbitrary<KeyValue[]> = fc.array(
  fc.tuple(fc.constantFrom(...KEYS), anyValue).map(([key, value]) => create(KeyValueSchema, { key, value })),
  { maxLength: 8 },
);

async function searchSpans(projectName: string) {
  const project = (await call(`/v2/projects?project_name=${projectName}`, { as: tenant })).body[0];
  const stream = (await call(`/v2/projects/${project.id}/log_streams?name=default`, { as: tenant })).body[0];
  return call(`/v2/projects/${project.id}/spans/search`, { as: tenant, body: { log_stream_id: stream.id, limit: 100 } });
}

describe("attributes of every type reach the mapping and the search", () => {
  it("deep JSON-looking text in an attribute is kept as text: stored, and searched back, without a 5xx", async () => {
    const project = `deep-${randomHex(4)}`;
    const text = deep(6_000);
    const span = otlpSpan({
      trace: randomHex(16),
      span: randomHex(8),
      attributes: { "gen_ai.operation.name": "chat", "gen_ai.tool.definitions": text, "gen_ai.input.messages": text, "output.value": deepObject(6_000), metadata: text },
    });
    const response = await postOtlp(protobufBody(exportRequest([span])), { headers: { Authorization: `Bearer ${tenant.apiKey}`, project } });
    expect(response.status).toBe(200);
    const found = await searchSpans(project);
    expect(found.status).toBe(200);
    expect(found.body.records).toHaveLength(1);
    expect(found.body.records[0].tools).toBe(text);
  });

  it("fast-check: random attributes, exported in both encodings, then searched", async () => {
    const project = `fuzz-${randomHex(4)}`;
    const headers = { Authorization: `Bearer ${tenant.apiKey}`, project };
    const statuses = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.array(attributes, { minLength: 1, maxLength: 3 }), fc.boolean(), async (spanAttributes, asJson) => {
        const trace = randomHex(16);
        const root = randomHex(8);
        const spans = spanAttributes.map((attrs, i) => {
          const span = otlpSpan({ trace, span: i === 0 ? root : randomHex(8), ...(i > 0 ? { parent: root } : {}) });
          span.attributes = attrs;
          return span;
        });
        const request = exportRequest(spans);
        const response = asJson
          ? await postOtlp(jsonBody(request), { contentType: "application/json", headers })
          : await postOtlp(protobufBody(request), { headers });
        statuses.add(response.status);
        expect(response.status, await response.text()).toBeLessThan(500);
        const found = await searchSpans(project);
        expect(found.status, JSON.stringify(found.body).slice(0, 300)).toBe(200);
      }),
      { numRuns: Number(process.env.FUZZ_RUNS) || 40 },
    );
    expect(statuses.has(200)).toBe(true);
  }, 180_000);
});
