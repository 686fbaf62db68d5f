/**
 * Annotations across partitions on several shards (contract section 13: a rating goes to its
 * record's partition, and annotation search and aggregates are exact; docs/partitions.md,
 * "Annotations"): a project whose traces sit on SHARD_0 and SHARD_1 must answer every rating
 * route, the feedback fields, the annotation filters, sorts and fully_annotated, usage counts,
 * available_columns, the record lookup and a template's deletion exactly as a one-partition
 * project holding the same traces and ratings.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { QUEUE_DELETION, purgeQueue } from "../src/annotation-queues/queue-deletion";
import { type PartitionedProject, fetchAs, ingestTraces, projectOn, rollTo, shardsOf } from "./support/partitioned-project";
import { type Tenant, createTenant } from "./support/tenants";

let tenant: Tenant;
const T0 = Date.UTC(2026, 2, 1, 0, 0, 0);

interface Side {
  p: PartitionedProject;
  traces: string[];
  templates: Record<string, string>;
}

const TRACE_IDS = Array.from({ length: 6 }, () => crypto.randomUUID());
let split: Side;
let single: Side;

const TEMPLATES: Record<string, Record<string, unknown>> = {
  like: { annotation_type: "like_dislike" },
  score: { annotation_type: "score", min: 1, max: 5 },
  tags: { annotation_type: "tags", tags: ["a", "b"] },
};

const call = (side: Side, path: string, body?: unknown, method?: string) => fetchAs(tenant, {}, `/v2/projects/${side.p.projectId}${path}`, body, method);

async function makeSide(partitioned: boolean): Promise<Side> {
  const p = await projectOn(tenant, "SHARD_0");
  const templates: Record<string, string> = {};
  for (const [key, constraints] of Object.entries(TEMPLATES)) {
    const made = await fetchAs(tenant, {}, `/v2/projects/${p.projectId}/annotation/templates`, { name: key, constraints });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    templates[key] = made.body.id;
  }
  // The same ids in both projects (ids are unique per project), so ties break alike on both sides.
  const traces = TRACE_IDS;
  const trace = (i: number) => ({ id: traces[i], name: `t${i}`, input: "in", output: "out", created_at: new Date(T0 + i * 60_000).toISOString() });
  await ingestTraces(p, [0, 1, 2].map(trace));
  if (partitioned) await rollTo(p, "SHARD_1");
  await ingestTraces(p, [3, 4, 5].map(trace));
  return { p, traces, templates };
}

/** The answer with each side's template and trace ids replaced by their names, to compare the two sides. */
function named(side: Side, value: unknown): unknown {
  let text = JSON.stringify(value);
  for (const [key, id] of Object.entries(side.templates)) text = text.replaceAll(id, `template:${key}`);
  side.traces.forEach((id, i) => (text = text.replaceAll(id, `trace:${i}`)));
  return JSON.parse(text);
}

async function rate(side: Side, template: string, trace: number, value: unknown) {
  const answer = await call(side, `/annotation/templates/${side.templates[template]}/records/${side.traces[trace]}/rating`, { rating: { annotation_type: TEMPLATES[template]!.annotation_type, value }, explanation: `why ${trace}` }, "PUT");
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body;
}

async function both<T>(work: (side: Side) => Promise<T>): Promise<[unknown, unknown]> {
  return [named(split, await work(split)), named(single, await work(single))];
}

async function feedbackPage(side: Side, extra: Record<string, unknown> = {}) {
  const answer = await call(side, "/traces/partial_search", { log_stream_id: side.p.logStreamId, select_columns: { column_ids: ["name"], include_all_feedback: true }, sort: { column_id: "name", ascending: true }, ...extra });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.records.map((r: Record<string, unknown>) => ({ name: r.name, annotations: r.annotations, annotation_aggregates: r.annotation_aggregates, annotation_agreement: r.annotation_agreement, feedback_rating_info: r.feedback_rating_info }));
}

async function names(side: Side, body: Record<string, unknown>) {
  const answer = await call(side, "/traces/partial_search", { log_stream_id: side.p.logStreamId, select_columns: { column_ids: ["name"] }, ...body });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.records.map((r: { name: string }) => r.name);
}

beforeAll(async () => {
  tenant = await createTenant("admin");
  split = await makeSide(true);
  single = await makeSide(false);
  const where = await shardsOf(split.p, split.traces);
  expect(split.traces.map((id) => where.get(id))).toEqual(["SHARD_0", "SHARD_0", "SHARD_0", "SHARD_1", "SHARD_1", "SHARD_1"]);
  for (const side of [split, single]) {
    await rate(side, "like", 1, true);
    await rate(side, "like", 4, true);
    await rate(side, "score", 4, 5);
    await rate(side, "score", 0, 2);
    await rate(side, "tags", 3, ["a"]);
    await rate(side, "tags", 4, ["a", "b"]);
  }
});

describe("annotations across partitions on two shards", () => {
  it("a rating of a record in a partition on another shard is written, read, replaced, and stored beside its record", async () => {
    const [a, b] = await both((side) => rate(side, "score", 3, 3));
    expect(a).toEqual({ ...(b as object), created_at: (a as { created_at: string }).created_at });
    const [got, gotSingle] = await both(async (side) => {
      const answer = await call(side, `/annotation/templates/${side.templates.score}/records/${side.traces[3]}/rating`);
      expect(answer.status).toBe(200);
      return { ...answer.body, created_at: null };
    });
    expect(got).toEqual(gotSingle);
    expect(got).toMatchObject({ rating: { annotation_type: "score", value: 3 } });
    const stored = await (env as unknown as Record<string, D1Database>).SHARD_1!.prepare("SELECT count(*) AS n FROM annotation_ratings WHERE project_id = ?1").bind(split.p.projectId).first<{ n: number }>();
    expect(stored!.n).toBe(5);
  });

  it("the trace alias and the bulk route reach traces on both shards", async () => {
    const [bulk, bulkSingle] = await both(async (side) => {
      const answer = await call(side, "/annotation/ratings", {
        operations: [{ operation_type: "create", annotation_template_id: side.templates.like, rating: { annotation_type: "like_dislike", value: false } }],
        selector: { selector_type: "traces", traces: [side.traces[2], side.traces[5], crypto.randomUUID()] },
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body.map((item: Record<string, unknown>) => ({ ...item, trace: (item.trace as string).startsWith("trace:") ? item.trace : "unknown" }));
    });
    expect(bulk).toEqual(bulkSingle);
    expect((bulk as { success: boolean }[]).map((i) => i.success)).toEqual([true, true, false]);
    const alias = await call(split, `/annotation/templates/${split.templates.like}/traces/${split.traces[5]}/rating`);
    expect(alias.status).toBe(200);
    expect(alias.body.rating.value).toBe(false);
  });

  it("the feedback fields, annotation filters, sorts and fully_annotated are the single-partition project's", async () => {
    const [page, pageSingle] = await both((side) => feedbackPage(side));
    expect(page).toEqual(pageSingle);
    expect((page as { annotations: object }[])[4]!.annotations).not.toEqual({});
    for (const body of [
      (s: Side) => ({ filter_tree: { filter: { type: "boolean", column_id: `annotations/${s.templates.like}`, operator: "eq", value: true } } }),
      (s: Side) => ({ filter_tree: { filter: { type: "number", column_id: `annotations/${s.templates.score}`, operator: "gte", value: 3 } } }),
      (s: Side) => ({ filter_tree: { filter: { type: "collection", column_id: `annotations/${s.templates.tags}`, operator: "contains", value: "b" } } }),
      () => ({ filter_tree: { filter: { type: "fully_annotated" } } }),
      () => ({ filter_tree: { not: { filter: { type: "fully_annotated" } } } }),
      (s: Side) => ({ sort: { column_id: `annotations/${s.templates.score}`, ascending: false } }),
    ]) {
      const [x, y] = await both((side) => names(side, body(side)));
      expect(x).toEqual(y);
    }
    expect(await names(split, { filter_tree: { filter: { type: "fully_annotated" } } })).toEqual(["t4"]);
  });

  it("usage counts, available_columns and the record lookup count and show ratings on both shards", async () => {
    const [templates, templatesSingle] = await both(async (side) => (await call(side, "/annotation/templates")).body.map((t: Record<string, unknown>) => ({ id: t.id, usage_count: t.usage_count })));
    expect(templates).toEqual(templatesSingle);
    const [one, oneSingle] = await both(async (side) => (await call(side, `/annotation/templates/${side.templates.tags}`)).body.usage_count);
    expect(one).toEqual(oneSingle);
    expect(one).toBe(2);
    // A fresh project's columns: tags rated only on SHARD_1.
    const [columns, columnsSingle] = await both(async (side) =>
      (await call(side, "/traces/available_columns", { log_stream_id: side.p.logStreamId })).body.columns.filter((c: { id: string }) => c.id.startsWith("annotations/")).map((c: Record<string, unknown>) => ({ id: c.id, is_empty: c.is_empty })),
    );
    expect(columns).toEqual(columnsSingle);
    expect((columns as { is_empty: boolean }[]).every((c) => !c.is_empty)).toBe(true);
    const [record, recordSingle] = await both(async (side) => {
      const answer = await call(side, `/traces/${side.traces[4]}`);
      expect(answer.status).toBe(200);
      return { annotations: answer.body.annotations, annotation_aggregates: answer.body.annotation_aggregates };
    });
    expect(record).toEqual(recordSingle);
  });

  it("a rating is removed on its record's shard, and a deleted template's ratings go from every shard", async () => {
    const [removed, removedSingle] = await both(async (side) => (await call(side, `/annotation/templates/${side.templates.like}/records/${side.traces[4]}/rating`, undefined, "DELETE")).status);
    expect([removed, removedSingle]).toEqual([200, 200]);
    const again = await call(split, `/annotation/templates/${split.templates.like}/records/${split.traces[4]}/rating`, undefined, "DELETE");
    expect(again.status).toBe(404);
    const [deleted, deletedSingle] = await both(async (side) => (await call(side, `/annotation/templates/${side.templates.tags}`, undefined, "DELETE")).body);
    expect(deleted).toEqual(deletedSingle);
    const left = await (env as unknown as Record<string, D1Database>).SHARD_1!.prepare("SELECT count(*) AS n FROM annotation_ratings WHERE template_id = ?1").bind(split.templates.tags).first<{ n: number }>();
    expect(left!.n).toBe(0);
    const [page, pageSingle] = await both((side) => feedbackPage(side));
    expect(page).toEqual(pageSingle);
    // A rating on a deleted template is refused wherever the record is.
    const refused = await call(split, `/annotation/templates/${split.templates.tags}/records/${split.traces[5]}/rating`, { rating: { annotation_type: "tags", value: ["a"] } }, "PUT");
    expect(refused.status).toBe(404);
  });
});

describe("annotation queues across partitions on two shards", () => {
  it("adds by id and by filter, lists, counts, rates, reports progress and removes as for one partition", async () => {
    const queueOf = async (side: Side) => {
      const made = await fetchAs(tenant, {}, "/v2/annotation_queues", { name: { value: `q-${crypto.randomUUID()}` } });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      const qid = made.body.id as string;
      const tpl = await fetchAs(tenant, {}, `/v2/annotation_queues/${qid}/templates`, { template: { name: "ok", constraints: { annotation_type: "like_dislike" } } });
      expect(tpl.status, JSON.stringify(tpl.body)).toBe(200);
      return { qid, tid: tpl.body.id as string, side };
    };
    const q = (path: string, body?: unknown, method?: string) => fetchAs(tenant, {}, `/v2/annotation_queues${path}`, body, method);
    const run = async (side: Side) => {
      const { qid, tid } = await queueOf(side);
      const byIds = await q(`/${qid}/records`, { project_id: side.p.projectId, run_id: side.p.logStreamId, record_selector: { type: "record_ids", record_ids: [side.traces[4], side.traces[1]] } });
      const byFilter = await q(`/${qid}/records`, { project_id: side.p.projectId, run_id: side.p.logStreamId, record_selector: { type: "filter_tree", record_type: "trace", filter_tree: { filter: { column_id: "name", operator: "one_of", value: ["t0", "t3", "t5", "t4"], type: "text" } } } });
      const page = await q(`/${qid}/partial_search`, { limit: 3 });
      const rest = await q(`/${qid}/partial_search`, { limit: 3, starting_token: 3 });
      const count = await q(`/${qid}/records/count`, {});
      const rated = await q(`/${qid}/records/${side.traces[5]}/rating?annotation_template_id=${tid}`, { rating: { annotation_type: "like_dislike", value: true } }, "PUT");
      const one = await q(`/${qid}/records/${side.traces[5]}`);
      const details = await q(`/${qid}/details`);
      const unrated = await q(`/${qid}/records/${side.traces[5]}/rating?annotation_template_id=${tid}`, undefined, "DELETE");
      const removed = await q(`/${qid}/records/remove`, { record_selector: { type: "record_ids", record_ids: [side.traces[4], side.traces[3]] } });
      const after = await q(`/${qid}/records/count`, {});
      const names = (answer: { body: { records: { name: string }[] } }) => answer.body.records.map((r) => r.name);
      return {
        added: [byIds.body, byFilter.body],
        pages: [names(page), names(rest), rest.body.paginated],
        count: count.body,
        rated: [rated.status, rated.body?.rating, one.status, one.body?.name],
        details: [details.status, details.body?.num_log_records ?? details.body?.records ?? null],
        unrated: unrated.status,
        removed: removed.body,
        after: after.body,
      };
    };
    const [a, b] = [await run(split), await run(single)];
    expect(a).toEqual(b);
    expect(a.count).toEqual({ count: 5 });
    expect(a.rated[0]).toBe(200);
    expect(a.removed).toEqual({ num_records_removed: 2 });
  });
});

describe("a deleted queue across partitions on two shards", () => {
  const entriesOn = async (shard: string, qid: string) =>
    (await (env as unknown as Record<string, D1Database>)[shard]!.prepare("SELECT count(*) AS n FROM annotation_queue_entries WHERE queue_id = ?1").bind(qid).first<{ n: number }>())!.n;
  const queueWithAll = async () => {
    const made = await fetchAs(tenant, {}, "/v2/annotation_queues", { name: { value: `doomed-${crypto.randomUUID()}` } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const qid = made.body.id as string;
    const added = await fetchAs(tenant, {}, `/v2/annotation_queues/${qid}/records`, { project_id: split.p.projectId, run_id: split.p.logStreamId, record_selector: { type: "record_ids", record_ids: split.traces } });
    expect(added.body).toEqual({ num_records_added: 6 });
    expect([await entriesOn("SHARD_0", qid), await entriesOn("SHARD_1", qid)]).toEqual([3, 3]);
    return qid;
  };

  it("has its entries purged on every shard holding a partition, by the request", async () => {
    const qid = await queueWithAll();
    const deleted = await fetchAs(tenant, {}, `/v2/annotation_queues/${qid}`, undefined, "DELETE");
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect([await entriesOn("SHARD_0", qid), await entriesOn("SHARD_1", qid)]).toEqual([0, 0]);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM annotation_queues WHERE id = ?1").bind(qid).first()).toEqual({ n: 0 });
  });

  it("has its entries purged on every shard by the maintenance, in bounded chunks, a redelivered purge harmless", async () => {
    const qid = await queueWithAll();
    // The request's share ran out: marked deleted, nothing purged yet.
    await env.DB.prepare("UPDATE annotation_queues SET deleted_at = 1 WHERE id = ?1").bind(qid).run();
    // One chunk: the first shard's entries go (fewer than a chunk), the project is not forgotten yet.
    expect(await purgeQueue(env as never, qid, 1)).toEqual({ chunks: 1, done: false });
    expect((await entriesOn("SHARD_0", qid)) + (await entriesOn("SHARD_1", qid))).toBe(3);
    const outcome = await purgeQueue(env as never, qid, QUEUE_DELETION.maintenanceChunks);
    expect(outcome.done).toBe(true);
    expect([await entriesOn("SHARD_0", qid), await entriesOn("SHARD_1", qid)]).toEqual([0, 0]);
    expect(await purgeQueue(env as never, qid, QUEUE_DELETION.maintenanceChunks)).toEqual({ chunks: 0, done: true });
  });
});
