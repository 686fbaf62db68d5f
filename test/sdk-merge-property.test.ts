/**
 * Property (issue 9, "retries never roll data back"): the calls the `galileo` SDK makes in
 * streaming mode for one trace (its create, each span's create, the updates of workflow and
 * agent spans, the trace's final update), delivered in ANY order and with ANY of them
 * duplicated (a client retry, a re-delivery), end in exactly the records, metadata, tags and
 * metrics that delivering them once, in order, gives. Each schedule runs in a project of its
 * own, with the same ids (ids are per project), and is compared with the ordered run.
 */
import { env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";
import { allRecordDbs } from "./support/record-dbs";
import { METRIC_ROWS } from "./support/metric-rows";
import { textIndexDifferencesEverywhere } from "./support/text-index";

interface Stream {
  projectId: string;
  logStreamId: string;
}

type Call = { kind: "trace create" | "span create" | "span update" | "trace update"; path: string; method: "POST" | "PATCH"; body: Record<string, unknown> };

interface SpanPlan {
  id: string;
  type: "workflow" | "agent" | "llm" | "tool";
  parent: number | null;
  update: { output: string; status_code: number | null; tags: string[]; duration_ns: number | null } | null;
}

const spanPlanArb = (index: number): fc.Arbitrary<Omit<SpanPlan, "id">> =>
  fc.record({
    type: fc.constantFrom("workflow", "agent", "llm", "tool"),
    parent: index === 0 ? fc.constant(null) : fc.option(fc.nat({ max: index - 1 }), { nil: null }),
    update: fc.option(
      fc.record({
        output: fc.string({ maxLength: 8 }),
        status_code: fc.option(fc.constantFrom(200, 500), { nil: null }),
        tags: fc.subarray(["a", "b"]),
        duration_ns: fc.option(fc.integer({ min: 1, max: 10_000 }), { nil: null }),
      }),
      { nil: null },
    ),
  });

const planArb = fc
  .integer({ min: 0, max: 4 })
  .chain((n) =>
    fc.record({
      spans: n === 0 ? fc.constant([]) : fc.tuple(...Array.from({ length: n }, (_, i) => spanPlanArb(i))),
      traceTags: fc.subarray(["start", "x"]),
      final: fc.record({ output: fc.string({ maxLength: 8 }), tags: fc.subarray(["done", "x"]), status_code: fc.option(fc.constantFrom(200, 400), { nil: null }) }),
    }),
  );

type Plan = typeof planArb extends fc.Arbitrary<infer T> ? T : never;

/** The SDK's calls for one trace, in the order it makes them. */
function sdkCalls(plan: Plan, ids: { trace: string; spans: string[] }): (s: Stream) => Call[] {
  return (s) => {
    const run = { log_stream_id: s.logStreamId, experiment_id: null };
    const calls: Call[] = [
      {
        kind: "trace create",
        method: "POST",
        path: `/v2/projects/${s.projectId}/traces`,
        body: {
          ...run,
          reliable: true,
          is_complete: false,
          traces: [{ type: "trace", id: ids.trace, name: "t", input: "question", created_at: "2026-11-22T05:35:06.128Z", tags: plan.traceTags, user_metadata: { env: "s" }, metrics: {}, spans: [] }],
        },
      },
    ];
    for (const [i, span] of (plan.spans as Omit<SpanPlan, "id">[]).entries()) {
      const parentId = span.parent === null ? ids.trace : ids.spans[span.parent]!;
      calls.push({
        kind: "span create",
        method: "POST",
        path: `/v2/projects/${s.projectId}/spans`,
        body: {
          ...run,
          trace_id: ids.trace,
          parent_id: parentId,
          reliable: false,
          spans: [{ type: span.type, id: ids.spans[i], name: span.type, input: "in", created_at: `2026-11-22T05:35:06.${130 + i}Z`, tags: [], metrics: { m: i }, user_metadata: { i: String(i) } }],
        },
      });
      if (span.update) {
        calls.push({ kind: "span update", method: "PATCH", path: `/v2/projects/${s.projectId}/spans/${ids.spans[i]}`, body: { ...run, span_id: ids.spans[i], ...span.update } });
      }
    }
    calls.push({
      kind: "trace update",
      method: "PATCH",
      path: `/v2/projects/${s.projectId}/traces/${ids.trace}`,
      body: { ...run, trace_id: ids.trace, ...plan.final, is_complete: true },
    });
    return calls;
  };
}

let tenant: Tenant;

beforeAll(async () => {
  tenant = await createTenant();
});

async function newStream(): Promise<Stream> {
  const project = await call("/v2/projects", { as: tenant, body: { name: `merge-${crypto.randomUUID()}` } });
  const stream = await call(`/v2/projects/${project.body.id}/log_streams`, { as: tenant, body: { name: "default" } });
  return { projectId: project.body.id, logStreamId: stream.body.id };
}

async function send(c: Call): Promise<void> {
  const answer = await call(c.path, { as: tenant, method: c.method, body: c.body });
  expect(answer.status, `${c.kind}: ${JSON.stringify(answer.body)}`).toBe(200);
}

/** What the run holds, without what differs by construction (project, run, row keys, server clock). */
async function stateOf(s: Stream): Promise<unknown> {
  const records = await allRecordDbs.prepare("SELECT * FROM records WHERE project_id = ? ORDER BY id").bind(s.projectId).all<Record<string, unknown>>();
  const strip = ({ rid: _r, family_key: _f, project_id: _p, run_id: _u, organization_id: _o, updated_at: _t, ...rest }: Record<string, unknown>) => rest;
  const side = async (table: string, columns: string) =>
    (
      await allRecordDbs.prepare(`SELECT s.record_id, ${columns} FROM ${table} AS s JOIN records AS r ON r.rid = s.record_rid WHERE r.project_id = ? ORDER BY 1, 2`)
        .bind(s.projectId)
        .all()
    ).results;
  const held = await allRecordDbs.prepare("SELECT count(*) AS n FROM record_patches WHERE project_id = ?").bind(s.projectId).first<{ n: number }>();
  return {
    records: records.results.map(strip),
    metadata: await side("record_metadata", "s.key, s.value"),
    tags: await side("record_tags", "s.tag"),
    metrics: await side(METRIC_ROWS, "s.name, s.value"),
    held: held!.n,
  };
}

describe("streaming calls in any order, any of them repeated", () => {
  it("end in the record the ordered calls give", async () => {
    await fc.assert(
      fc.asyncProperty(
        planArb.chain((plan) =>
          fc.record({
            plan: fc.constant(plan),
            // How often each call is delivered (1 or 2), then the order of all deliveries.
            copies: fc.array(fc.integer({ min: 1, max: 2 }), { minLength: 2 * plan.spans.length + 2, maxLength: 2 * plan.spans.length + 2 }),
            order: fc.array(fc.nat(), { minLength: 4 * plan.spans.length + 4, maxLength: 4 * plan.spans.length + 4 }),
          }),
        ),
        async ({ plan, copies, order }) => {
          const ids = { trace: crypto.randomUUID(), spans: (plan.spans as unknown[]).map(() => crypto.randomUUID()) };
          const callsFor = sdkCalls(plan, ids);

          const ordered = await newStream();
          for (const c of callsFor(ordered)) await send(c);
          const expected = await stateOf(ordered);

          const shuffled = await newStream();
          const deliveries = callsFor(shuffled).flatMap((c, i) => Array.from({ length: copies[i] ?? 1 }, () => c));
          // A permutation driven by `order` (a Fisher-Yates over the drawn numbers).
          for (let i = deliveries.length - 1; i > 0; i--) {
            const j = (order[i] ?? 0) % (i + 1);
            [deliveries[i], deliveries[j]] = [deliveries[j]!, deliveries[i]!];
          }
          for (const c of deliveries) await send(c);
          expect(await stateOf(shuffled)).toEqual(expected);
          // The text index follows every write and removal (migration 0012).
          expect(await textIndexDifferencesEverywhere()).toEqual([]);
        },
      ),
      { numRuns: 25 },
    );
  }, 600_000);
});
