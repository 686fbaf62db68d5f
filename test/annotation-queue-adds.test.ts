/**
 * A large add to a queue works in chunks of 1,000 records inside the request, and other requests
 * are served between its chunks: against D1 in the same process (wrangler dev, this test pool),
 * D1 calls chained back to back never let the runtime take another request, so every search on
 * the shard waited for the whole add (docs/benchmarks.md, "Annotations (issue 20)").
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type AnnotatedProject, createProjectWithRun, ingestTraces } from "./support/annotations";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";

let owner: Tenant;
let project: AnnotatedProject;
const TRACES = 3_000;

beforeAll(async () => {
  owner = await createTenant("admin");
  project = await createProjectWithRun(owner);
  await ingestTraces(owner, project, TRACES);
}, 120_000);

describe("adding many records to a queue", () => {
  it("answers other requests between its chunks", { timeout: 120_000 }, async () => {
    const queue = await call("/v2/annotation_queues", { as: owner, body: { name: { value: `big-${crypto.randomUUID()}` } } });
    expect(queue.status).toBe(200);
    const order: string[] = [];
    const add = call(`/v2/annotation_queues/${queue.body.id}/records`, {
      as: owner,
      body: { project_id: project.projectId, run_id: project.runId, record_selector: { type: "filter_tree", filter_tree: { filter: { type: "text", column_id: "name", operator: "contains", value: "trace" } } } },
    }).then((answer) => {
      order.push("add");
      return answer;
    });
    // Sent while the add's first chunk is being read: answered before the add's three chunks end.
    const probe = call(`/v2/projects/${project.projectId}/traces/partial_search`, { as: owner, body: { log_stream_id: project.runId, limit: 1 } }).then((answer) => {
      order.push("search");
      return answer;
    });
    const [added, searched] = await Promise.all([add, probe]);
    expect(added.body).toEqual({ num_records_added: TRACES });
    expect(searched.status).toBe(200);
    expect(order).toEqual(["search", "add"]);
  });
});
