/**
 * The built-in presets' values (contract section 15, "Details"), the text a scorer sees of a
 * record, and the deterministic sample.
 */
import { describe, expect, it } from "vitest";
import { parsePresetParams, type PresetName } from "../src/evaluations/preset-definitions";
import { runPreset, similarity } from "../src/evaluations/preset-scorers";
import { sampleFraction, selects } from "../src/evaluations/record-selection";
import type { ScorableRecord } from "../src/evaluations/scorable-record";
import { renderPrompt, keyHeaderValue } from "../src/evaluations/judge-calls";

const record = (over: Partial<ScorableRecord> = {}): ScorableRecord => ({
  id: "r1", run_id: "run", record_type: "span", type: "llm", name: "chat", input: "hello there", input_is_json: 0, output: "The answer is 42.", output_is_json: 0,
  user_metadata: "{}", metrics: "{}", model: "gpt-4o", is_complete: 1, dataset_output: null, created_at: 0, ...over,
});

function run(preset: PresetName, params: Record<string, unknown>, r: ScorableRecord = record()) {
  const parsed = parsePresetParams(preset, params);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.faults));
  return runPreset(parsed.definition, r);
}

describe("presets", () => {
  it("regex, contains, is_json and json_schema answer 1 or 0", () => {
    expect(run("regex", { pattern: "\\d+" })).toEqual({ value: 1 });
    expect(run("regex", { pattern: "^hello", field: "input" })).toEqual({ value: 1 });
    expect(run("regex", { pattern: "ANSWER", flags: "i" })).toEqual({ value: 1 });
    expect(run("regex", { pattern: "xyz" })).toEqual({ value: 0 });
    expect(run("contains", { values: ["answer", "nope"] })).toEqual({ value: 1 });
    expect(run("contains", { values: ["answer", "nope"], mode: "all" })).toEqual({ value: 0 });
    expect(run("contains", { values: ["nope"], mode: "none" })).toEqual({ value: 1 });
    expect(run("contains", { values: ["ANSWER"], case_sensitive: true })).toEqual({ value: 0 });
    expect(run("is_json", {})).toEqual({ value: 0 });
    expect(run("is_json", {}, record({ output: '{"a":1}' }))).toEqual({ value: 1 });
    const schema = { type: "object", required: ["a"], properties: { a: { type: "integer" } } };
    expect(run("json_schema", { schema }, record({ output: '{"a":1}' }))).toEqual({ value: 1 });
    expect(run("json_schema", { schema }, record({ output: '{"a":"x"}' }))).toEqual({ value: 0 });
    expect(run("json_schema", { schema })).toEqual({ value: 0 });
  });

  it("length counts, or checks inclusive bounds", () => {
    expect(run("length", {})).toEqual({ value: 17 });
    expect(run("length", { unit: "words" })).toEqual({ value: 4 });
    expect(run("length", { unit: "words", min: 4, max: 4 })).toEqual({ value: 1 });
    expect(run("length", { unit: "words", max: 3 })).toEqual({ value: 0 });
  });

  it("similarity: exact, levenshtein, jaccard; a missing reference is not scored", () => {
    expect(similarity("levenshtein", "kitten", "sitting")).toBeCloseTo(1 - 3 / 7);
    expect(similarity("jaccard", "A b c", "a B d")).toBeCloseTo(2 / 4);
    expect(similarity("jaccard", "", " ")).toBe(1);
    expect(similarity("levenshtein", "", "")).toBe(1);
    const r = record({ user_metadata: JSON.stringify({ expected: "The answer is 42." }) });
    expect(run("similarity", { reference: "metadata.expected" }, r)).toEqual({ value: 1 });
    expect(run("similarity", { reference: "dataset_output", method: "jaccard" }, record({ dataset_output: '"the answer"' }))).toEqual({ value: 0.5 });
    expect(run("similarity", { reference: "metadata.expected" })).toEqual({ skipped: "the record has no metadata.expected to compare with" });
  });

  it("latency_under, cost_under, pii and refusal", () => {
    expect(run("latency_under", { ms: 10 }, record({ metrics: '{"duration_ns": 9999999}' }))).toEqual({ value: 1 });
    expect(run("latency_under", { ms: 10 }, record({ metrics: '{"duration_ns": 10000000}' }))).toEqual({ value: 0 });
    expect(run("cost_under", { usd: 0.01 })).toEqual({ skipped: "the record has no cost" });
    expect(run("cost_under", { usd: 0.01 }, record({ metrics: '{"cost": 0.001}' }))).toEqual({ value: 1 });
    expect(run("pii", {}, record({ output: "mail me at jane@example.com" }))).toEqual({ value: 1 });
    expect(run("pii", { detectors: ["phone"] }, record({ output: "mail me at jane@example.com" }))).toEqual({ value: 0 });
    expect(run("refusal", {}, record({ output: "I\u2019m sorry, but I can\u2019t help with that." }))).toEqual({ value: 1 });
    expect(run("refusal", {})).toEqual({ value: 0 });
    expect(run("refusal", { phrases: ["answer is"] })).toEqual({ value: 1 });
  });

  it("reads an llm span's messages as role: content lines and a retriever's documents as their contents", () => {
    const messages = JSON.stringify([{ role: "system", content: "be brief" }, { role: "user", content: [{ type: "text", text: "hi" }] }]);
    expect(run("regex", { pattern: "^system: be brief\\nuser: hi$", field: "input" }, record({ input: messages, input_is_json: 1 }))).toEqual({ value: 1 });
    const docs = JSON.stringify([{ content: "doc one", metadata: {} }, { content: "doc two" }]);
    expect(run("length", { unit: "words" }, record({ output: docs, output_is_json: 1 }))).toEqual({ value: 4 });
    expect(run("is_json", { field: "input" }, record({ input: null }))).toEqual({ skipped: "the record has no input" });
  });
});

describe("selection and prompts", () => {
  it("samples by a hash of (record, scorer): stable, and close to the rate", () => {
    expect(sampleFraction("a", "s")).toBe(sampleFraction("a", "s"));
    const settings = { scorers: [], segment_filters: [{ filter: null, sample_rate: 0.3, llm_scorers: false }] };
    const scorer = { id: "s", isLlm: false, nodeTypes: ["llm"], filters: [] };
    let n = 0;
    for (let i = 0; i < 10_000; i++) if (selects(settings, scorer, record({ id: `r${i}` }))) n++;
    expect(n / 10_000).toBeGreaterThan(0.27);
    expect(n / 10_000).toBeLessThan(0.33);
    // LLM-only segments leave preset scorers at rate 1; node types and filters apply.
    expect(selects({ scorers: [], segment_filters: [{ filter: null, sample_rate: 0, llm_scorers: true }] }, scorer, record())).toBe(true);
    expect(selects({ scorers: [], segment_filters: [] }, { ...scorer, nodeTypes: ["trace"] }, record())).toBe(false);
    expect(selects({ scorers: [], segment_filters: [] }, { ...scorer, filters: [{ name: "metadata", key: "env", operator: "not_in", value: ["prod"] }] }, record({ user_metadata: '{"env":"prod"}' }))).toBe(false);
    expect(selects({ scorers: [], segment_filters: [] }, { ...scorer, filters: [{ name: "node_name", operator: "contains", value: "ha" }] }, record())).toBe(true);
  });

  it("renders prompt templates and the key header", () => {
    const r = record({ user_metadata: '{"lang":"fr"}', model: null });
    expect(renderPrompt("Q: {input}\nA: {output}\n{metadata.lang}/{metadata.none}/{model}/{name} {other}", r)).toBe("Q: hello there\nA: The answer is 42.\nfr///chat {other}");
    expect(keyHeaderValue("Authorization", "sk-1")).toBe("Bearer sk-1");
    expect(keyHeaderValue("Authorization", "Basic abc")).toBe("Basic abc");
    expect(keyHeaderValue("api-key", "k")).toBe("k");
  });
});
