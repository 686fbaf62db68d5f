/**
 * The export writes each record's JSON text from its stored row (src/export/record-json.ts)
 * instead of shaping it and stringifying the result: the same bytes, record by record, for every
 * kind, every shape of stored input and output (text, JSON as ingest writes it, messages and
 * documents that shaping normalises, JSON nested past the API's depth, text that is not JSON),
 * columns SQLite's JSON functions rewrote, redaction on and off, counts and metric info. A text
 * stored with `*_is_json = 1` is always JSON.stringify's (src/ingest/record-rows.ts), the one
 * premise of the copy: the property at the end holds it for any JSON value.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { redacted } from "../src/export/export-formats";
import { recordJson } from "../src/export/record-json";
import { MAX_JSON_DEPTH } from "../src/http/bounded-body";
import type { SearchQuery } from "../src/search/search-query";
import { type StoredRow, shapeRecord } from "../src/search/shape-record";

const query = (family: SearchQuery["family"], includeMetricInfo = false): SearchQuery => ({
  family,
  filter: { kind: "and", children: [] },
  sort: null,
  limit: 100,
  offset: 0,
  projection: { columns: null, metrics: "all", feedback: true },
  includeCounts: true,
  includeMetricInfo,
  truncateFields: false,
});

const familyOf = (kind: string): SearchQuery["family"] => (kind === "session" ? "session" : kind === "trace" ? "trace" : "span");

function expectSameBytes(row: StoredRow, includeMetricInfo = false) {
  const q = query(familyOf(String(row.type)), includeMetricInfo);
  for (const redact of [true, false]) {
    const shaped = shapeRecord(row, q);
    expect(recordJson(row, q, redact), `${row.type} redact ${redact}`).toBe(JSON.stringify(redact ? redacted(shaped) : shaped));
  }
}

const base: StoredRow = {
  id: "a1b2", type: "trace", name: "n", input: "q", input_is_json: 0, output: "a", output_is_json: 0, redacted_input: null,
  redacted_output: null, created_at: 1_790_556_006_899_736, updated_at: null, user_metadata: "{}", tags: "[]", status_code: 200,
  external_id: null, dataset_input: null, dataset_output: null, dataset_metadata: null, session_id: "s", trace_id: "a1b2",
  project_id: "p", run_id: "r", has_children: 1, is_complete: 1, error_message: null, progress_message: null, parent_id: "a1b2",
  step_number: 1, agent_type: "router", model: "m", temperature: 0.7, finish_reason: null, tools: null, events: null,
  tool_call_id: null, control_id: null, agent_name: null, check_stage: null, applies_to: null, evaluator_name: null,
  selector_path: null, previous_session_id: null, metrics: '{"duration_ns":3782000000}', metric_info: null,
  feedback_rating_info: null, num_spans: 4, num_traces: 2,
};

const deep = `${"[".repeat(MAX_JSON_DEPTH + 2)}${"]".repeat(MAX_JSON_DEPTH + 2)}`;

describe("recordJson writes what JSON.stringify of the shaped record writes", () => {
  const kinds = ["session", "trace", "workflow", "llm", "retriever", "tool", "agent", "control"];
  const contents: [unknown, 0 | 1][] = [
    [null, 0],
    ["plain text", 0],
    ['{"looks":"like json"}', 0],
    [JSON.stringify({ nested: { list: [1, 2.5, 1e21, 1e-7, "é\u2028\ud800"], "1": "integer key first", b: true } }), 1],
    [JSON.stringify([{ role: "user", content: "q" }, { role: "assistant", content: "a", tool_calls: [{ id: "x" }] }]), 1],
    [JSON.stringify([{ content: "no role" }, { role: "user", content: null }, { role: 3, content: "r" }]), 1],
    [JSON.stringify({ role: "assistant", content: "one message" }), 1],
    [JSON.stringify({ content: "no role, one message" }), 1],
    [JSON.stringify([{ content: "doc", metadata: { source: "a" } }]), 1],
    [JSON.stringify([{ page_content: "alias" }, { content: "no metadata" }, { content: "m", metadata: [] }, "text doc"]), 1],
    [JSON.stringify([]), 1],
    [JSON.stringify("a json string"), 1],
    ["null", 1],
    ["12", 1],
    [deep, 1],
  ];
  for (const kind of kinds) {
    it(`${kind}: every shape of stored input and output`, () => {
      for (const [text, isJson] of contents) {
        expectSameBytes({ ...base, type: kind, input: text, input_is_json: isJson, output: text, output_is_json: isJson });
      }
    });
  }

  it("redacted input and output of every shape, replacing input and output where they hold a value", () => {
    for (const kind of ["trace", "llm", "retriever"]) {
      for (const redactedText of [null, "[REDACTED]", "123", "null", JSON.stringify([{ role: "user", content: "[R]" }]), JSON.stringify({ content: "[R]" }), deep]) {
        expectSameBytes({ ...base, type: kind, input: JSON.stringify([{ role: "user", content: "secret" }]), input_is_json: 1, redacted_input: redactedText, redacted_output: redactedText });
      }
    }
  });

  it("JSON columns as SQLite's JSON functions write them, and the other stored fields", () => {
    const variants: Partial<StoredRow>[] = [
      { user_metadata: '{"b":"x","1":"y"}', metrics: '{"a":2.0,"b":1e5,"c":"not a number","d":-0.0}', metric_info: '{"a":{"k":1.50}}' },
      { user_metadata: "not json", metrics: "[1]", tags: '["a","b"]', dataset_metadata: '{"k":"v"}', feedback_rating_info: '{"x":1}' },
      { tags: "not a list", tools: '[{"type":"function"}]', events: '[{"type":"message"}]', dataset_input: "di", dataset_output: "do" },
      { tools: "not a list", events: "not json", created_at: 0, updated_at: 1_790_556_006_899_001, has_children: 0, is_complete: 0 },
      { name: 'quote " backslash \\ line\nbreak', error_message: "\u0000control", temperature: -0, status_code: null, num_spans: null },
      { metrics: "{}", metric_info: null },
    ];
    for (const kind of ["session", "trace", "llm", "control"]) {
      for (const variant of variants) {
        expectSameBytes({ ...base, type: kind, ...variant });
        expectSameBytes({ ...base, type: kind, ...variant }, true);
      }
    }
  });

  it("any value the ingest stores as JSON (JSON.stringify of what the client sent), for any kind", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(...kinds), (value, kind) => {
        const text = JSON.stringify(value);
        expectSameBytes({ ...base, type: kind, input: text, input_is_json: 1, output: text, output_is_json: 1 });
      }),
      { numRuns: 300 },
    );
  });
});
