/**
 * A large add to a queue works in small chunks inside the request (ADD_CHUNK records, one D1 call
 * each, with a pause after each), and other requests are served between its chunks: against D1
 * in the same process (wrangler dev, this test pool), D1 calls chained back to back never let the
 * runtime take another request, so every search on the shard waited for the whole add; and a
 * statement of 1,000 records held the shard long enough to triple a concurrent search's p95 at 1M
 * records (docs/benchmarks.md, "Annotations (issue 20, part 8)").
 */
import { beforeAll, describe, expect, it } from "vitest";
import { ADD_CHUNK, ADD_D1_BUDGET, addChunkSize, MAX_ADD_CHUNK } from "../src/annotation-queues/queue-entries";
import { QUEUE_LIMITS } from "../src/annotation-queues/queue-schemas";
import { type AnnotatedProject, createProjectWithRun, ingestTraces } from "./support/annotations";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";

let owner: Tenant;
let project: AnnotatedProject;
/** The run's traces, oldest first (created a second apart from BASE). */
let traces: string[];
const TRACES = 3_000;
const BASE = Date.parse("2026-11-01T00:00:00Z");

beforeAll(async () => {
  owner = await createTenant("admin");
  project = await createProjectWithRun(owner);
  ({ traces } = await ingestTraces(owner, project, TRACES));
}, 120_000);

const createdSince = (ms: number) => ({ filter: { type: "date", column_id: "created_at", operator: "gte", value: new Date(ms).toISOString() } });

async function newQueue(): Promise<string> {
  const queue = await call("/v2/annotation_queues", { as: owner, body: { name: { value: `big-${crypto.randomUUID()}` } } });
  expect(queue.status).toBe(200);
  return queue.body.id;
}

const addByFilter = (qid: string, filterTree: unknown) =>
  call(`/v2/annotation_queues/${qid}/records`, { as: owner, body: { project_id: project.projectId, run_id: project.runId, record_selector: { type: "filter_tree", filter_tree: filterTree } } });

/** The queue's record ids in its order (as added), read a page of 1,000 at a time. */
async function queueOrder(qid: string): Promise<string[]> {
  const ids: string[] = [];
  for (let token = 0; ; ) {
    const page = await call(`/v2/annotation_queues/${qid}/partial_search`, { as: owner, body: { pagination: { starting_token: token, limit: 1000 } } });
    expect(page.status).toBe(200);
    ids.push(...page.body.records.map((record: { id: string }) => record.id));
    if (page.body.next_starting_token === null) return ids;
    token = page.body.next_starting_token;
  }
}

const roundTrips = (headers: Headers) => Number(/d1;desc="round trips";dur=(\d+)/.exec(headers.get("Server-Timing") ?? "")?.[1]);

describe("adding many records to a queue", () => {
  it("answers other requests between its chunks", { timeout: 120_000 }, async () => {
    const qid = await newQueue();
    const order: string[] = [];
    const add = call(`/v2/annotation_queues/${qid}/records`, {
      as: owner,
      body: { project_id: project.projectId, run_id: project.runId, record_selector: { type: "filter_tree", filter_tree: { filter: { type: "text", column_id: "name", operator: "contains", value: "trace" } } } },
    }).then((answer) => {
      order.push("add");
      return answer;
    });
    // Sent while the add's first chunk is being read: answered before the add's chunks end.
    const probe = call(`/v2/projects/${project.projectId}/traces/partial_search`, { as: owner, body: { log_stream_id: project.runId, limit: 1 } }).then((answer) => {
      order.push("search");
      return answer;
    });
    const [added, searched] = await Promise.all([add, probe]);
    expect(added.body).toEqual({ num_records_added: TRACES });
    expect(searched.status).toBe(200);
    expect(order).toEqual(["search", "add"]);
  });

  it("writes at most ADD_CHUNK records a statement, one D1 call a chunk", { timeout: 120_000 }, async () => {
    const added = await addByFilter(await newQueue(), createdSince(BASE));
    expect(added.body).toEqual({ num_records_added: TRACES });
    // Fewer calls would mean bigger statements (a search waits for each); more, that 100,000
    // records would not fit a request's D1 queries. The rest: the caller's key, the queue, the
    // project, the positions.
    const chunks = Math.ceil(TRACES / ADD_CHUNK);
    expect(roundTrips(added.headers)).toBeGreaterThanOrEqual(chunks);
    expect(roundTrips(added.headers)).toBeLessThanOrEqual(chunks + 8);
  });

  it("adds each record once, in native order, when retried after a first attempt stopped midway", { timeout: 120_000 }, async () => {
    const qid = await newQueue();
    // What a first attempt cut off after its first chunks had added: the newest 300 (3 chunks).
    const first = await addByFilter(qid, createdSince(BASE + (TRACES - 300) * 1000));
    expect(first.body).toEqual({ num_records_added: 300 });
    const retried = await addByFilter(qid, createdSince(BASE));
    expect(retried.body).toEqual({ num_records_added: TRACES - 300 });
    expect(await queueOrder(qid)).toEqual([...traces].reverse());
    const again = await addByFilter(qid, createdSince(BASE));
    expect(again.body).toEqual({ num_records_added: 0 });
  });

  it("adds ids in request order across chunks, each once", { timeout: 120_000 }, async () => {
    const qid = await newQueue();
    const ids = [...traces.slice(0, 400)].reverse().concat(traces.slice(400, 700));
    const added = await call(`/v2/annotation_queues/${qid}/records`, { as: owner, body: { project_id: project.projectId, run_id: project.runId, record_selector: { type: "record_ids", record_ids: [...ids, ...ids.slice(0, 50)] } } });
    expect(added.body).toEqual({ num_records_added: ids.length });
    expect(await queueOrder(qid)).toEqual(ids);
  });
});

describe("the size of an add's chunks", () => {
  it("stays small when the request's D1 budget allows, and grows just enough when it does not", () => {
    const max = QUEUE_LIMITS.maxRecordsPerAdd;
    expect(addChunkSize(max, 1)).toBe(ADD_CHUNK);
    expect(addChunkSize(500, 4)).toBe(ADD_CHUNK);
    for (const callsPerChunk of [1, 2, 3, 5, 8]) {
      const size = addChunkSize(max, callsPerChunk);
      expect(size).toBeGreaterThanOrEqual(ADD_CHUNK);
      expect(size).toBeLessThanOrEqual(MAX_ADD_CHUNK);
      if (size < MAX_ADD_CHUNK) expect(Math.ceil(max / size) * callsPerChunk).toBeLessThanOrEqual(ADD_D1_BUDGET);
    }
    expect(addChunkSize(max, 2)).toBeGreaterThan(ADD_CHUNK);
    expect(addChunkSize(max, 100)).toBe(MAX_ADD_CHUNK);
  });
});
