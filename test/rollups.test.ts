/**
 * Token and cost roll-ups (contract, section 9): a trace without its own value holds the sum over
 * its llm spans (only those), a session the sum over its traces; exact after every write path
 * (batch, streaming spans before or after their trace, merges that move a span to another trace
 * or a trace to another session), after deletions, and never over a value the client sent.
 * Rolled-up values search and sort like any metric.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";
import { allRecordDbs, recordsOf } from "./support/record-dbs";
import { backfillRollups } from "../src/maintenance/backfill-rollups";
import { withUpkeepPaused } from "./support/upkeep-paused";

const uuid = () => crypto.randomUUID();

let tenant: Tenant;
let projectId: string;
let logStreamId: string;

beforeAll(async () => {
  tenant = await createTenant();
  projectId = (await call("/v2/projects", { as: tenant, body: { name: "rollups" } })).body.id;
  logStreamId = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "default" } })).body.id;
});

async function metricsOf(id: string): Promise<Record<string, number>> {
  const row = await allRecordDbs.prepare("SELECT metrics FROM records WHERE id = ?1").bind(id).all<{ metrics: string }>();
  expect(row.results).toHaveLength(1);
  return JSON.parse(row.results[0]!.metrics);
}

const tokens = (metrics: Record<string, number>) => ({
  num_input_tokens: metrics.num_input_tokens,
  num_output_tokens: metrics.num_output_tokens,
  num_total_tokens: metrics.num_total_tokens,
  cost: metrics.cost,
});

function llm(id: string, input: number, output: number, cost?: number, extra: Record<string, unknown> = {}) {
  const metrics: Record<string, number> = { num_input_tokens: input, num_output_tokens: output, num_total_tokens: input + output };
  if (cost !== undefined) metrics.cost = cost;
  return { id, type: "llm", name: "llm", model: "my-model", metrics, ...extra };
}

async function ingest(traces: unknown[], sessionId?: string) {
  const response = await call(`/v2/projects/${projectId}/traces`, { as: tenant, body: { log_stream_id: logStreamId, session_id: sessionId, traces } });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
}

async function newSession() {
  const id = uuid();
  expect((await call(`/v2/projects/${projectId}/sessions`, { as: tenant, body: { log_stream_id: logStreamId, id } })).status).toBe(200);
  return id;
}

describe("roll-ups at ingestion", () => {
  it("sum llm spans (at any depth, only llm) into the trace and traces into the session", async () => {
    const session = await newSession();
    const [t1, t2] = [uuid(), uuid()];
    await ingest(
      [
        {
          id: t1,
          name: "t1",
          spans: [
            // The agent repeats its children's usage (as the AI SDK's invoke_agent does): not summed.
            { id: uuid(), type: "agent", name: "agent", metrics: { num_input_tokens: 30, num_output_tokens: 7, cost: 1 }, spans: [llm(uuid(), 10, 2, 0.5), llm(uuid(), 20, 5, 0.25)] },
          ],
        },
        { id: t2, name: "t2", spans: [llm(uuid(), 1, 1, 0.125)] },
      ],
      session,
    );
    expect(tokens(await metricsOf(t1))).toEqual({ num_input_tokens: 30, num_output_tokens: 7, num_total_tokens: 37, cost: 0.75 });
    expect(tokens(await metricsOf(t2))).toEqual({ num_input_tokens: 1, num_output_tokens: 1, num_total_tokens: 2, cost: 0.125 });
    expect(tokens(await metricsOf(session))).toEqual({ num_input_tokens: 31, num_output_tokens: 8, num_total_tokens: 39, cost: 0.875 });
  });

  it("never replace a trace's own value; the session sums the trace's own value", async () => {
    const session = await newSession();
    const trace = uuid();
    await ingest([{ id: trace, name: "own", metrics: { cost: 9, toxicity: 0.5 }, spans: [llm(uuid(), 10, 2, 0.5)] }], session);
    expect(await metricsOf(trace)).toEqual({ cost: 9, toxicity: 0.5, num_input_tokens: 10, num_output_tokens: 2, num_total_tokens: 12 });
    expect(tokens(await metricsOf(session))).toEqual({ num_input_tokens: 10, num_output_tokens: 2, num_total_tokens: 12, cost: 9 });
    // The client's value arriving later (an older write, even) replaces the rolled-up one.
    await ingest([{ id: trace, name: "own", metrics: { num_input_tokens: 100 } }], session);
    expect(tokens(await metricsOf(trace))).toEqual({ num_input_tokens: 100, num_output_tokens: 2, num_total_tokens: 12, cost: 9 });
    expect(tokens(await metricsOf(session))).toMatchObject({ num_input_tokens: 100 });
    // ...and further spans no longer change it.
    await ingest([{ id: trace, name: "own", spans: [llm(uuid(), 5, 5)] }], session);
    expect(tokens(await metricsOf(trace))).toEqual({ num_input_tokens: 100, num_output_tokens: 7, num_total_tokens: 22, cost: 9 });
  });

  it("a trace without llm spans has no roll-up, not zeros", async () => {
    const trace = uuid();
    await ingest([{ id: trace, name: "tools only", spans: [{ id: uuid(), type: "tool", name: "x", metrics: { num_input_tokens: 4 } }] }]);
    expect(await metricsOf(trace)).toEqual({});
  });

  it("follow streamed spans that arrive before and after their trace", async () => {
    const trace = uuid();
    const post = (spans: unknown[]) =>
      call(`/v2/projects/${projectId}/spans`, { as: tenant, body: { log_stream_id: logStreamId, trace_id: trace, parent_id: trace, spans } });
    expect((await post([llm(uuid(), 3, 4, 0.5)])).status).toBe(200);
    const session = await newSession();
    await ingest([{ id: trace, name: "late trace", is_complete: false }], session);
    expect(tokens(await metricsOf(trace))).toEqual({ num_input_tokens: 3, num_output_tokens: 4, num_total_tokens: 7, cost: 0.5 });
    expect((await post([llm(uuid(), 1, 1, 0.25)])).status).toBe(200);
    expect(tokens(await metricsOf(trace))).toEqual({ num_input_tokens: 4, num_output_tokens: 5, num_total_tokens: 9, cost: 0.75 });
    expect(tokens(await metricsOf(session))).toEqual({ num_input_tokens: 4, num_output_tokens: 5, num_total_tokens: 9, cost: 0.75 });
  });

  it("follow a span that a later write moves to another trace, and a trace moved to another session", async () => {
    const [a, b] = [uuid(), uuid()];
    const [s1, s2] = [await newSession(), await newSession()];
    const span = uuid();
    await ingest([{ id: a, name: "a", spans: [llm(span, 10, 10, 1), llm(uuid(), 1, 1, 0.5)] }], s1);
    await ingest([{ id: b, name: "b", spans: [llm(uuid(), 2, 2, 0.25)] }], s1);
    expect(tokens(await metricsOf(s1))).toMatchObject({ num_input_tokens: 13, cost: 1.75 });
    // The span re-sent under trace b (newer): it counts there and no longer in a.
    await ingest([{ id: b, name: "b", spans: [llm(span, 10, 10, 1, { updated_at: new Date().toISOString() })] }], s1);
    expect(tokens(await metricsOf(a))).toEqual({ num_input_tokens: 1, num_output_tokens: 1, num_total_tokens: 2, cost: 0.5 });
    expect(tokens(await metricsOf(b))).toEqual({ num_input_tokens: 12, num_output_tokens: 12, num_total_tokens: 24, cost: 1.25 });
    expect(tokens(await metricsOf(s1))).toMatchObject({ num_input_tokens: 13, cost: 1.75 });
    // Trace b re-sent in session s2.
    await ingest([{ id: b, name: "b", updated_at: new Date().toISOString() }], s2);
    expect(tokens(await metricsOf(s1))).toEqual({ num_input_tokens: 1, num_output_tokens: 1, num_total_tokens: 2, cost: 0.5 });
    expect(tokens(await metricsOf(s2))).toEqual({ num_input_tokens: 12, num_output_tokens: 12, num_total_tokens: 24, cost: 1.25 });
  });
});

describe("roll-ups after deletion", () => {
  it("drop a deleted span's share, and the value itself with the last llm span", async () => {
    const session = await newSession();
    const trace = uuid();
    const marker = `rollup-${uuid()}`;
    await ingest(
      [{ id: trace, name: "t", spans: [llm(uuid(), 10, 10, 1, { user_metadata: { erase: marker } }), llm(uuid(), 1, 2, 0.5, { user_metadata: { erase: `${marker}-2` } })] }],
      session,
    );
    const erase = async (value: string) => {
      const answer = await call("/v2/org-jobs/delete-by-metadata?immediate=true", { as: tenant, body: { metadata_key: "erase", metadata_value: value } });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    };
    await erase(marker);
    expect(tokens(await metricsOf(trace))).toEqual({ num_input_tokens: 1, num_output_tokens: 2, num_total_tokens: 3, cost: 0.5 });
    expect(tokens(await metricsOf(session))).toEqual({ num_input_tokens: 1, num_output_tokens: 2, num_total_tokens: 3, cost: 0.5 });
    await erase(`${marker}-2`);
    expect(await metricsOf(trace)).toEqual({});
    expect(await metricsOf(session)).toEqual({});
  });
});

describe("rolled-up values in search", () => {
  it("filter and sort like any metric, and their columns say roll_up_method sum", async () => {
    const own = await createTenant();
    const project = (await call("/v2/projects", { as: own, body: { name: "rollup-search" } })).body.id;
    const stream = (await call(`/v2/projects/${project}/log_streams`, { as: own, body: { name: "default" } })).body.id;
    const ids = [uuid(), uuid(), uuid()];
    const response = await call(`/v2/projects/${project}/traces`, {
      as: own,
      body: { log_stream_id: stream, traces: ids.map((id, i) => ({ id, name: `t${i}`, spans: [llm(uuid(), 10 * (i + 1), 1, i + 0.5)] })) },
    });
    expect(response.status).toBe(200);
    const search = await call(`/v2/projects/${project}/traces/partial_search`, {
      as: own,
      body: {
        log_stream_id: stream,
        filters: [{ type: "number", column_id: "metrics/num_input_tokens", operator: "gte", value: 20 }],
        sort: { column_id: "metrics/cost", ascending: false },
        select_columns: { column_ids: ["metrics/cost"] },
      },
    });
    expect(search.status, JSON.stringify(search.body)).toBe(200);
    expect(search.body.records.map((r: { id: string; metrics: Record<string, number> }) => [r.id, r.metrics.cost])).toEqual([
      [ids[2], 2.5],
      [ids[1], 1.5],
    ]);
    const columns = await call(`/v2/projects/${project}/traces/available_columns`, { as: own, body: { log_stream_id: stream } });
    const byId = new Map(columns.body.columns.map((c: { id: string }) => [c.id, c]));
    for (const id of ["metrics/cost", "metrics/num_input_tokens", "metrics/num_output_tokens", "metrics/num_total_tokens"]) {
      expect(byId.get(id), id).toMatchObject({ roll_up_method: "sum" });
    }
  });
});

describe("the backfill of records written before the roll-ups", () => {
  it("recomputes them window by window, resumably, and changes nothing the second time", async () => {
    const session = await newSession();
    const [a, b] = [uuid(), uuid()];
    await ingest([{ id: a, name: "old a", spans: [llm(uuid(), 10, 2, 0.5)] }, { id: b, name: "old b", metrics: { cost: 3 }, spans: [llm(uuid(), 1, 1, 0.25)] }], session);
    const db = await recordsOf(projectId);
    // As before migration 0013: the parents without their roll-ups.
    const clear = "UPDATE records SET metrics = json_remove(metrics, '$.num_input_tokens', '$.num_output_tokens', '$.num_total_tokens', '$.cost'), derived_metrics = 0 WHERE id = ?1";
    await db.batch([db.prepare(clear).bind(a), db.prepare(clear).bind(session), db.prepare("UPDATE records SET metrics = '{\"cost\":3}', derived_metrics = 0 WHERE id = ?1").bind(b)]);
    await db.prepare(clear).bind(session).run();
    expect(await metricsOf(a)).toEqual({});
    expect(await metricsOf(session)).toEqual({});
    const { first } = (await db.prepare("SELECT min(rid) - 1 AS first FROM records WHERE id IN (?1, ?2, ?3)").bind(a, b, session).first<{ first: number }>())!;
    const { last } = (await db.prepare("SELECT max(rid) AS last FROM records").first<{ last: number }>())!;
    // The upkeep the ingest started (src/upkeep) runs this backfill too: held off while the test counts windows.
    await withUpkeepPaused(db, async () => {
      await db.prepare("UPDATE rollup_backfill SET after_rid = ?1, until_rid = ?2").bind(first, last).run();
      expect(await backfillRollups(db, 1, 2)).toEqual({ windows: 1, complete: false });
      let outcome = { windows: 0, complete: false };
      while (!outcome.complete) outcome = await backfillRollups(db, 3, 2);
    });
    expect(tokens(await metricsOf(a))).toEqual({ num_input_tokens: 10, num_output_tokens: 2, num_total_tokens: 12, cost: 0.5 });
    expect(tokens(await metricsOf(b))).toEqual({ num_input_tokens: 1, num_output_tokens: 1, num_total_tokens: 2, cost: 3 });
    expect(tokens(await metricsOf(session))).toEqual({ num_input_tokens: 11, num_output_tokens: 3, num_total_tokens: 14, cost: 3.5 });
    expect(await backfillRollups(db)).toEqual({ windows: 0, complete: true });
  });
});
