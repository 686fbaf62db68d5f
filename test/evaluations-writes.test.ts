/**
 * What scoring costs the database that holds the records (issue 34, item 6: ingest with five
 * presets on at 0.9x of ingest without): scoring a chunk writes each record ONCE, whatever the
 * number of scorers (all their `metrics.<name>` and `metric_info.<name>` in one update), and
 * rewrites no record whose stored results it already carries (a redelivery writes no record);
 * the record's other metric rows stay in place (the metric-row trigger touches only what changed).
 * The values are those of the stored result rows, as before (result-writes.ts).
 */
import { createMessageBatch, env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { EvaluationMessage } from "../src/env";
import { handleEvaluationQueue } from "../src/evaluations/evaluation-consumer";
import { call } from "./support/client";
import { recordsOf } from "./support/record-dbs";
import { createTenant, type Tenant } from "./support/tenants";

let admin: Tenant;
let projectId: string;

beforeAll(async () => {
  admin = await createTenant();
  projectId = (await call("/v2/projects", { as: admin, body: { name: "scoring writes" } })).body.id;
});

const NODE_TYPES = ["trace", "llm", "tool", "retriever", "workflow", "agent"];
const PRESETS: [string, string, Record<string, unknown>][] = [
  ["w_is_json", "is_json", {}],
  ["w_words", "length", { unit: "words" }],
  ["w_contains", "contains", { values: ["refund"] }],
  ["w_regex", "regex", { pattern: "\\d{3,}" }],
  ["w_fast", "latency_under", { ms: 2000 }],
];

async function presetScorers(): Promise<string[]> {
  const ids: string[] = [];
  for (const [name, preset, params] of PRESETS) {
    const created = await call("/v2/scorers", { as: admin, body: { name, scorer_type: "preset", scoreable_node_types: NODE_TYPES, ...(preset === "length" ? { output_type: "count" } : {}) } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect((await call(`/v2/scorers/${created.body.id}/version/preset`, { as: admin, body: { preset, params } })).status).toBe(200);
    ids.push(created.body.id);
  }
  return ids;
}

const deliver = (body: EvaluationMessage) => handleEvaluationQueue(createMessageBatch<EvaluationMessage>("trace-store-evaluations", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body }]), env);

describe("the writes of scoring", () => {
  it("writes each record once per chunk, whatever the number of scorers, and none again on redelivery", async () => {
    const run = (await call(`/v2/projects/${projectId}/log_streams`, { as: admin, body: { name: "five presets" } })).body.id as string;
    // Written before any scorer is on the run: nothing scores them on the write; the test delivers the message itself.
    const traces = Array.from({ length: 4 }, (_, t) => ({
      id: crypto.randomUUID(),
      name: `trace ${t}`,
      input: "where is my order 12345",
      output: t % 2 === 0 ? '{"refund": true}' : "a refund is on its way",
      metrics: { duration_ns: 1_000_000 * (t + 1) },
      spans: [
        { id: crypto.randomUUID(), type: "llm", name: "llm", input: "q", output: "refund 999", metrics: { duration_ns: 5_000_000_000, num_input_tokens: 3, num_output_tokens: 4 } },
        { id: crypto.randomUUID(), type: "tool", name: "tool", input: "q", output: "{}" },
      ],
    }));
    const ids = traces.flatMap((t) => [t.id, ...t.spans.map((s) => s.id)]);
    expect((await call(`/v2/projects/${projectId}/traces`, { as: admin, body: { log_stream_id: run, traces } })).status).toBe(200);
    const scorers = await presetScorers();
    expect((await call(`/v2/projects/${projectId}/log_streams/${run}/metric_settings`, { as: admin, method: "PATCH", body: { scorers: scorers.map((id) => ({ id })) } })).status).toBe(200);

    const db = await recordsOf(projectId);
    // Counts every rewrite of a record's metric_info (a test-only trigger on this file's own database).
    await db.batch([
      db.prepare("CREATE TABLE IF NOT EXISTS test_record_rewrites (record_id TEXT NOT NULL)"),
      db.prepare("CREATE TRIGGER IF NOT EXISTS test_count_record_rewrites AFTER UPDATE OF metric_info ON records BEGIN INSERT INTO test_record_rewrites VALUES (NEW.id); END"),
      // And every metric row deleted: adding scores to a record must leave its other metric rows in place.
      db.prepare("CREATE TABLE IF NOT EXISTS test_metric_row_deletes (record_id TEXT NOT NULL)"),
      db.prepare("CREATE TRIGGER IF NOT EXISTS test_count_metric_row_deletes AFTER DELETE ON record_metrics BEGIN INSERT INTO test_metric_row_deletes VALUES (OLD.record_id); END"),
    ]);
    const rewrites = async () => (await db.prepare("SELECT record_id, count(*) AS n FROM test_record_rewrites WHERE record_id IN (SELECT value FROM json_each(?1)) GROUP BY record_id").bind(JSON.stringify(ids)).all<{ record_id: string; n: number }>()).results;

    await deliver({ kind: "score", organizationId: admin.organizationId, projectId, runId: run, recordIds: ids });
    const first = await rewrites();
    expect(first).toHaveLength(ids.length);
    expect(first.every((r) => r.n === 1), JSON.stringify(first)).toBe(true);
    const deleted = await db.prepare("SELECT count(*) AS n FROM test_metric_row_deletes WHERE record_id IN (SELECT value FROM json_each(?1))").bind(JSON.stringify(ids)).first<{ n: number }>();
    expect(deleted!.n).toBe(0);

    // Every scorer's value and metric_info on each record, as the stored result rows say.
    const stored = await db.prepare("SELECT id, metrics, metric_info FROM records WHERE project_id = ?1 AND id IN (SELECT value FROM json_each(?2))").bind(projectId, JSON.stringify(ids)).all<{ id: string; metrics: string; metric_info: string }>();
    const results = await db.prepare("SELECT record_id, scorer_id, status, value, info FROM evaluation_results WHERE project_id = ?1 AND record_id IN (SELECT value FROM json_each(?2))").bind(projectId, JSON.stringify(ids)).all<{ record_id: string; scorer_id: string; status: string; value: number | null; info: string }>();
    expect(results.results).toHaveLength(ids.length * PRESETS.length);
    for (const record of stored.results) {
      const metrics = JSON.parse(record.metrics) as Record<string, number>;
      const info = JSON.parse(record.metric_info) as Record<string, unknown>;
      for (const [i, [name]] of PRESETS.entries()) {
        const row = results.results.find((r) => r.record_id === record.id && r.scorer_id === scorers[i])!;
        expect(info[name]).toEqual(JSON.parse(row.info));
        if (row.value === null) expect(metrics[name]).toBeUndefined();
        else expect(metrics[name]).toBe(row.value);
      }
    }
    const llmSpan = stored.results.find((r) => r.id === traces[0]!.spans[0]!.id)!;
    expect(JSON.parse(llmSpan.metrics)).toMatchObject({ w_is_json: 0, w_words: 2, w_contains: 1, w_regex: 1, w_fast: 0, num_input_tokens: 3, duration_ns: 5_000_000_000 });
    // The metric rows follow (filters and sorts read them).
    const rows = await db.prepare("SELECT count(*) AS n FROM record_metrics WHERE record_id = ?1").bind(llmSpan.id).first<{ n: number }>();
    expect(rows!.n).toBe(Object.keys(JSON.parse(llmSpan.metrics)).length);

    // Redelivered: no record rewritten, still one result per record and scorer.
    await deliver({ kind: "score", organizationId: admin.organizationId, projectId, runId: run, recordIds: ids });
    expect(await rewrites()).toEqual(first);
    const count = await db.prepare("SELECT count(*) AS n FROM evaluation_results WHERE project_id = ?1 AND record_id IN (SELECT value FROM json_each(?2))").bind(projectId, JSON.stringify(ids)).first<{ n: number }>();
    expect(count!.n).toBe(ids.length * PRESETS.length);
    await db.batch([db.prepare("DROP TRIGGER test_count_record_rewrites"), db.prepare("DROP TRIGGER test_count_metric_row_deletes")]);
  });
});
