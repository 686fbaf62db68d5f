/**
 * Proof of exactness for partitions (issue 32, item 3; contract section 13): random workloads
 * replayed into a project whose partitions roll between shards at random points and into one
 * with a single partition give the same answers on every partition-aware read route. The
 * workload mixes new roots (traces with spans, some in sessions), late children of old roots
 * (streamed spans, re-sent traces), PATCHes, ratings, additions to an annotation queue by filter,
 * deletions by metadata and by filter, and the retention's expiry. Both projects get the same
 * record ids, so pages compare record for record (the id breaks ties in every sort); their
 * templates and queues differ by id only, and the answers are compared with those ids named.
 *
 * Read routes compared: partial_search of traces, spans and sessions in several sorts, walked
 * page by page with `starting_token` and at deep tokens off the walk's steps; the feedback fields, an annotation filter and sort,
 * `fully_annotated`; the templates' usage counts; the queue's search and count; the count routes;
 * available_columns; metrics/search by day and name; custom_search of spans; the streamed export.
 */
import { env } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Env } from "../src/env";
import { clearPartitionCache } from "../src/partitions/partition-catalog";
import { scheduleExpiry } from "../src/retention/schedule-expiry";
import { clearProjectRoutes } from "../src/shards/project-routing";
import { deleteByMetadata, waitForJob } from "./deletion-fixtures";
import { type PartitionedProject, fetchAs, ingestTraces, projectOn, rollTo } from "./support/partitioned-project";
import { createTenant } from "./support/tenants";

const DAY_MS = 86_400_000;
const NAMES = ["alpha", "beta", "gamma"];
const ENVS = ["prod", "dev"];
const TAGS = ["red", "blue"];

type Op =
  | { kind: "roots"; traces: { name: number; env: number; tag: number; ageDays: number; spans: number }[]; inSession: boolean }
  | { kind: "late-span"; pick: number; name: number }
  | { kind: "resend"; pick: number }
  | { kind: "patch"; pick: number; output: string }
  | { kind: "roll" }
  | { kind: "delete-by-metadata"; env: number }
  | { kind: "delete-by-filter"; tag: number }
  | { kind: "rate"; pick: number; template: "like" | "score"; value: number }
  | { kind: "queue-by-filter"; tag: number };

/** Each project's annotation templates (by name) and its annotation queue. */
interface Annotated extends PartitionedProject {
  templates: Record<"like" | "score", string>;
  queueId: string;
}

async function annotated(p: PartitionedProject): Promise<Annotated> {
  const templates = {} as Record<"like" | "score", string>;
  for (const [name, constraints] of [["like", { annotation_type: "like_dislike" }], ["score", { annotation_type: "score", min: 1, max: 5 }]] as const) {
    const made = await fetchAs(p.tenant, {}, `/v2/projects/${p.projectId}/annotation/templates`, { name, constraints });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    templates[name] = made.body.id;
  }
  const queue = await fetchAs(p.tenant, {}, "/v2/annotation_queues", { name: { value: `q-${crypto.randomUUID()}` } });
  expect(queue.status, JSON.stringify(queue.body)).toBe(200);
  return { ...p, templates, queueId: queue.body.id };
}

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("roots" as const),
      traces: fc.array(
        fc.record({ name: fc.nat(2), env: fc.nat(1), tag: fc.nat(1), ageDays: fc.integer({ min: 0, max: 20 }), spans: fc.nat(2) }),
        { minLength: 1, maxLength: 3 },
      ),
      inSession: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("late-span" as const), pick: fc.nat(), name: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("resend" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("patch" as const), pick: fc.nat(), output: fc.constantFrom("done", "failed", "") }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("roll" as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("delete-by-metadata" as const), env: fc.nat(1) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("delete-by-filter" as const), tag: fc.nat(1) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("rate" as const), pick: fc.nat(), template: fc.constantFrom("like" as const, "score" as const), value: fc.integer({ min: 1, max: 5 }) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("queue-by-filter" as const), tag: fc.nat(1) }) },
);

/**
 * Replays the workload into both projects, op by op (the single one is never rolled). Each roll
 * opens the next partition on the other shard, so that every roll puts records on another
 * database (the partitioned project starts on SHARD_0).
 */
async function replay(ops: Op[], both: Annotated[], partitioned: PartitionedProject, now: number): Promise<void> {
  const traces: { id: string; name: string }[] = [];
  let openShard = "SHARD_0";
  for (const op of ops) {
    switch (op.kind) {
      case "roots": {
        const session = op.inSession ? crypto.randomUUID() : undefined;
        const batch = op.traces.map((t) => {
          const created = new Date(now - t.ageDays * DAY_MS).toISOString();
          const trace = {
            id: crypto.randomUUID(),
            name: NAMES[t.name]!,
            input: `q ${traces.length}`,
            output: "a",
            created_at: created,
            user_metadata: { env: ENVS[t.env]! },
            tags: [TAGS[t.tag]!],
            spans: Array.from({ length: t.spans }, (_, i) => ({ id: crypto.randomUUID(), type: "llm", name: `${NAMES[(t.name + i) % 3]}-span`, created_at: created })),
          };
          traces.push({ id: trace.id, name: trace.name });
          return trace;
        });
        for (const p of both) {
          if (session) {
            const created = await fetchAs(p.tenant, {}, `/v2/projects/${p.projectId}/sessions`, { log_stream_id: p.logStreamId, id: session, name: `s-${session.slice(0, 4)}` });
            expect(created.status, JSON.stringify(created.body)).toBe(200);
          }
          await ingestTraces(p, batch, session ? { session_id: session } : {});
        }
        break;
      }
      case "late-span": {
        if (traces.length === 0) break;
        const root = traces[op.pick % traces.length]!;
        // Every record states its time: one the service stamps would differ between the projects.
        const span = { id: crypto.randomUUID(), type: "tool", name: `${NAMES[op.name]}-late`, created_at: new Date(now).toISOString() };
        for (const p of both) {
          const answer = await fetchAs(p.tenant, {}, `/v2/projects/${p.projectId}/spans`, { log_stream_id: p.logStreamId, trace_id: root.id, parent_id: root.id, spans: [span] });
          // A trace deleted meanwhile refuses its late span alike in both projects.
          expect([200, 404, 409, 422]).toContain(answer.status);
        }
        break;
      }
      case "resend": {
        if (traces.length === 0) break;
        const root = traces[op.pick % traces.length]!;
        const again = { id: root.id, name: root.name, spans: [{ id: crypto.randomUUID(), type: "llm", name: "again", created_at: new Date(now).toISOString() }] };
        for (const p of both) {
          const answer = await fetchAs(p.tenant, {}, `/v2/projects/${p.projectId}/traces`, { log_stream_id: p.logStreamId, traces: [again] });
          expect([200, 409, 422]).toContain(answer.status);
        }
        break;
      }
      case "patch": {
        if (traces.length === 0) break;
        const root = traces[op.pick % traces.length]!;
        for (const p of both) {
          const answer = await fetchAs(p.tenant, {}, `/v2/projects/${p.projectId}/traces/${root.id}`, { log_stream_id: p.logStreamId, trace_id: root.id, output: op.output }, "PATCH");
          expect([200, 404, 409, 422]).toContain(answer.status);
        }
        break;
      }
      case "rate": {
        if (traces.length === 0) break;
        const root = traces[op.pick % traces.length]!;
        const rating = op.template === "like" ? { annotation_type: "like_dislike", value: op.value > 2 } : { annotation_type: "score", value: op.value };
        for (const p of both) {
          const path = `/v2/projects/${p.projectId}/annotation/templates/${p.templates[op.template]}/records/${root.id}/rating`;
          const answer = await fetchAs(p.tenant, {}, path, { rating, explanation: `because ${op.value}` }, "PUT");
          // A trace deleted meanwhile cannot be rated, alike in both projects.
          expect([200, 404], JSON.stringify(answer.body)).toContain(answer.status);
        }
        break;
      }
      case "queue-by-filter": {
        for (const p of both) {
          const selector = { type: "filter_tree", record_type: "trace", filter_tree: { filter: { type: "collection", column_id: "tags", operator: "contains", value: TAGS[op.tag]! } } };
          const answer = await fetchAs(p.tenant, {}, `/v2/annotation_queues/${p.queueId}/records`, { project_id: p.projectId, run_id: p.logStreamId, record_selector: selector });
          expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        }
        break;
      }
      case "roll":
        openShard = openShard === "SHARD_0" ? "SHARD_1" : "SHARD_0";
        await rollTo(partitioned, openShard);
        break;
      case "delete-by-metadata": {
        // An organization's job: both projects (one tenant) at once.
        const started = await deleteByMetadata(partitioned.tenant, { metadata_key: "env", metadata_value: ENVS[op.env]! });
        expect(started.status, JSON.stringify(started.body)).toBe(200);
        if (started.body.job_id) expect((await waitForJob(partitioned.tenant, started.body.job_id)).job.status).toBe("completed");
        break;
      }
      case "delete-by-filter": {
        for (const p of both) {
          const body = { log_stream_id: p.logStreamId, filters: [{ type: "collection", column_id: "tags", operator: "contains", value: TAGS[op.tag]! }] };
          const answer = await fetchAs(p.tenant, {}, `/v2/projects/${p.projectId}/traces/delete`, body);
          expect(answer.status, JSON.stringify(answer.body)).toBe(200);
          if (answer.body.job_id) expect((await waitForJob(p.tenant, answer.body.job_id)).job.status).toBe("completed");
        }
        break;
      }
    }
  }
}

/** Every answer of the compared read routes, with the project's ids taken out. */
async function reads(p: Annotated, now: number): Promise<unknown> {
  const base = `/v2/projects/${p.projectId}`;
  const walks: Record<string, string[]> = {};
  const searches: [string, Record<string, unknown>][] = [
    ["traces/partial_search", {}],
    ["traces/partial_search", { sort: { column_id: "name", ascending: true } }],
    ["traces/partial_search", { sort: { column_id: "created_at", ascending: true } }],
    ["traces/partial_search", { filters: [{ type: "text", column_id: "name", operator: "eq", value: "beta" }], sort: { column_id: "output", ascending: false } }],
    ["spans/partial_search", { sort: { column_id: "name", ascending: false } }],
    ["sessions/partial_search", {}],
  ];
  for (const [route, body] of searches) {
    const seen: string[] = [];
    let token: number | null = 0;
    for (let guard = 0; token !== null && guard < 60; guard++) {
      const page = await fetchAs(p.tenant, {}, `${base}/${route}`, { log_stream_id: p.logStreamId, ...body, limit: 4, starting_token: token });
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      seen.push(...page.body.records.map((r: { id: string; output?: unknown }) => `${r.id}:${JSON.stringify(r.output ?? null)}`));
      token = page.body.next_starting_token;
    }
    walks[`${route} ${JSON.stringify(body)}`] = seen;
    // Pages that start deep and off the walk's steps (a deep page is found from the shard that
    // leads the order, or by merging the shards' first matches: src/search/deep-page.ts).
    for (const jump of new Set([1, 3, Math.floor(seen.length / 2) + 1, Math.max(seen.length - 2, 1)])) {
      const page = await fetchAs(p.tenant, {}, `${base}/${route}`, { log_stream_id: p.logStreamId, ...body, limit: 3, starting_token: jump });
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      walks[`${route} ${JSON.stringify(body)} at ${jump}`] = [...page.body.records.map((r: { id: string }) => r.id), String(page.body.next_starting_token)];
    }
  }
  // The feedback fields of every trace, an annotation filter, an annotation sort and fully_annotated.
  const feedback: Record<string, unknown> = {};
  const annotationSearches: [string, Record<string, unknown>][] = [
    ["all", { select_columns: { column_ids: ["name"], include_all_feedback: true } }],
    ["liked", { filter_tree: { filter: { type: "boolean", column_id: `annotations/${p.templates.like}`, operator: "eq", value: true } } }],
    ["by score", { sort: { column_id: `annotations/${p.templates.score}`, ascending: false } }],
    ["fully annotated", { filter_tree: { filter: { type: "fully_annotated" } } }],
  ];
  for (const [label, body] of annotationSearches) {
    const page = await fetchAs(p.tenant, {}, `${base}/traces/partial_search`, { log_stream_id: p.logStreamId, limit: 100, ...body });
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    feedback[label] = page.body.records.map((r: Record<string, unknown>) => [r.id, r.annotations ?? null, r.annotation_aggregates ?? null, r.feedback_rating_info ?? null]);
  }
  const templates = await fetchAs(p.tenant, {}, `${base}/annotation/templates`);
  expect(templates.status, JSON.stringify(templates.body)).toBe(200);
  const usage = templates.body.map((t: { name: string; usage_count: number }) => [t.name, t.usage_count]);
  // The queue: its records in its own order, walked, and its count.
  const queued: string[] = [];
  let queueToken: number | null = 0;
  for (let guard = 0; queueToken !== null && guard < 60; guard++) {
    const page = await fetchAs(p.tenant, {}, `/v2/annotation_queues/${p.queueId}/partial_search`, { limit: 4, starting_token: queueToken });
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    queued.push(...page.body.records.map((r: { id: string }) => r.id));
    queueToken = page.body.next_starting_token ?? null;
  }
  const queueCount = await fetchAs(p.tenant, {}, `/v2/annotation_queues/${p.queueId}/records/count`, {});
  expect(queueCount.status, JSON.stringify(queueCount.body)).toBe(200);
  const counts: Record<string, number> = {};
  for (const family of ["traces", "spans", "sessions"]) {
    const answer = await fetchAs(p.tenant, {}, `${base}/${family}/count`, { log_stream_id: p.logStreamId });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    counts[family] = answer.body.total_count;
  }
  const columns = await fetchAs(p.tenant, {}, `${base}/traces/available_columns`, { log_stream_id: p.logStreamId });
  expect(columns.status, JSON.stringify(columns.body)).toBe(200);
  // Metrics over the workload's 21 days (scanned: the cells are not refreshed here), by day and name.
  const window = { start_time: new Date(now - 22 * DAY_MS).toISOString(), end_time: new Date(now + DAY_MS).toISOString() };
  const metrics = await fetchAs(p.tenant, {}, `${base}/metrics/search`, { log_stream_id: p.logStreamId, ...window, interval: 1440, group_by: "name" });
  expect(metrics.status, JSON.stringify(metrics.body)).toBe(200);
  const custom = await fetchAs(p.tenant, {}, `${base}/metrics/custom_search`, {
    log_stream_id: p.logStreamId,
    ...window,
    record_type: "span",
    interval_minutes: 1440,
    metric_details: ["Count", "Sum", "P50", "Max"].map((aggregation) => ({ id: aggregation, metric_name: "duration_ns", aggregation })),
  });
  expect(custom.status, JSON.stringify(custom.body)).toBe(200);
  const exported = await fetchAs(p.tenant, {}, `${base}/export_records`, { log_stream_id: p.logStreamId, root_type: "trace", export_format: "jsonl", sort: { column_id: "name", ascending: true } });
  expect(exported.status, exported.text.slice(0, 300)).toBe(200);
  const anonymous = (text: string) =>
    text.replaceAll(p.projectId, "P").replaceAll(p.logStreamId, "R").replaceAll(p.templates.like, "TEMPLATE:like").replaceAll(p.templates.score, "TEMPLATE:score").replaceAll(p.queueId, "Q");
  // A PATCH's updated_at is the service's clock at each project's write: not compared.
  const exportedLines = anonymous(exported.text).replace(/"updated_at":"[^"]*"/g, '"updated_at":"T"');
  // A rating's created_at is the service's clock at each project's write: not compared.
  const annotations = anonymous(JSON.stringify({ feedback, usage, queued, queueCount: queueCount.body })).replace(/"created_at":"[^"]*"/g, '"created_at":"T"');
  return { walks, counts, annotations: JSON.parse(annotations), columns: anonymous(JSON.stringify(columns.body)), metrics: metrics.body, custom: custom.body, exported: exportedLines };
}

describe("partitions: exactness against a single partition (property)", () => {
  it("every compared read answers the same after any workload of writes, late children, PATCHes, ratings, queue additions, rolls, deletions and expiry", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 4, maxLength: 12 }), fc.boolean(), async (ops, expire) => {
        clearPartitionCache();
        clearProjectRoutes();
        const tenant = await createTenant("admin");
        const fields = expire ? { retention_days: 10 } : {};
        const single = await annotated(await projectOn(tenant, "SHARD_1", fields));
        const partitioned = await annotated(await projectOn(tenant, "SHARD_0", fields));
        const now = Date.now();
        // The workload ends by queueing every trace left (by both tags), so that the queue's reads
        // compare entries in every run, not only when no deletion came after a random addition.
        const queueAll: Op[] = [{ kind: "queue-by-filter", tag: 0 }, { kind: "queue-by-filter", tag: 1 }];
        await replay([...ops, ...queueAll], [single, partitioned], partitioned, now);
        if (expire) {
          const outcome = await scheduleExpiry(env as unknown as Env, now * 1000);
          for (const job of outcome.jobs.filter((j) => j.organizationId === tenant.organizationId)) {
            expect((await waitForJob(tenant, job.jobId)).job.status).toBe("completed");
          }
        }
        expect(await reads(partitioned, now)).toEqual(await reads(single, now));
      }),
      { numRuns: 8 },
    );
  }, 180_000);
});
