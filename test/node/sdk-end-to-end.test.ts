/**
 * The public `galileo` SDK (and its generated client `galileo-generated`), pinned in
 * devDependencies, against the real service: `wrangler dev` on a free loopback port over a fresh
 * local database (test/node/sdk-service.ts). The SDK is configured only as a user would:
 * GALILEO_API_URL and GALILEO_API_KEY. What lands is checked in the database itself and read
 * back through the SDK's own search and columns calls.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "./sdk-service";
import { METRIC_ROWS } from "../support/metric-rows";

type Galileo = typeof import("galileo");
type Generated = typeof import("galileo-generated");

let service: RunningService;
let galileo: Galileo;
let generated: Generated;

/** Tags every record this run logs, so that searches find exactly this run's records. */
const RUN = `e2e-${Date.now().toString(36)}`;
const PROJECT = `sdk-batch-${RUN}`;
const LOG_STREAM = "production";
const STREAM_PROJECT = `sdk-stream-${RUN}`;
const STREAM_LOG_STREAM = "live";

/** A SQL string literal for values this test generated (ids, names). */
const lit = (value: string) => `'${value.replace(/'/g, "''")}'`;

async function rows<T = Record<string, any>>(query: string): Promise<T[]> {
  const [first] = await service.sql<T>(query);
  return first ?? [];
}

function byId<T extends { id: string }>(list: T[]): Map<string, T> {
  return new Map(list.map((r) => [r.id, r]));
}

/** Polls until `done` (what the SDK sends is written by a queue consumer, after the request). */
async function until<T>(what: string, probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 300));
    value = await probe();
  }
  return value;
}

/**
 * Lets a streaming logger's requests finish before terminate(), as a long-running application
 * does (it does not stop five seconds after logging). terminate() waits five seconds at most and
 * then stops the SDK's task handler, which from then on never sends a task that waits for
 * another (a span's update waits for the span's create): under a loaded machine (load 10-15)
 * the create of a workflow span landed after those five seconds and its conclusion was never
 * sent, with or without partitions (measured on the commit before them, p32b). Bounded: a
 * request that never completes still fails the test through the poll that follows.
 */
async function settle(logger: unknown, timeoutMs = 60_000): Promise<void> {
  const tasks = (logger as { taskHandler?: { allTasksCompleted(): boolean } }).taskHandler;
  const deadline = Date.now() + timeoutMs;
  while (tasks && !tasks.allTasksCompleted() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
}

function tokenClaims(token: string): { exp: number; iat: number } {
  return JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"));
}

async function apiKeyLogin(): Promise<{ response: Response; body: { access_token: string; expires_in: number } }> {
  const response = await fetch(`${service.apiUrl}/login/api_key`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ api_key: service.tenant.apiKey }),
  });
  return { response, body: (await response.json()) as { access_token: string; expires_in: number } };
}

beforeAll(async () => {
  service = await startService();
  // As a user configures the SDK; set before the SDK is loaded (it reads its config once).
  process.env.GALILEO_API_URL = service.apiUrl;
  process.env.GALILEO_API_KEY = service.tenant.apiKey;
  galileo = await import("galileo");
  generated = await import("galileo-generated");
});

afterAll(async () => {
  await service?.stop();
});

describe("the galileo SDK against the real service", () => {
  /** Ids of what earlier steps logged, for the steps that read it back. */
  const ids = {} as Record<
    | "session" | "trace" | "workflow" | "agent" | "llm" | "tool" | "retriever" | "single" | "singleSpan" | "followUp"
    | "project" | "logStream" | "experiment" | "experimentTrace" | "streamProject" | "streamRun" | "streamTrace" | "streamWorkflow",
    string
  >;

  it("issues tokens that outlive the run; repeated healthchecks and logins never reach the database", async () => {
    const first = await apiKeyLogin();
    expect(first.response.status).toBe(200);
    const claims = tokenClaims(first.body.access_token);
    // The SDK's generated client keeps its first token for the life of the process.
    expect(claims.exp - claims.iat).toBeGreaterThanOrEqual(3600);
    expect(first.body.expires_in).toBe(claims.exp - claims.iat);

    // The SDK calls both again before every read: both must stay cheap.
    const timings: number[] = [];
    for (let i = 0; i < 10; i++) {
      const started = performance.now();
      const health = await fetch(`${service.apiUrl}/healthcheck`);
      const login = await apiKeyLogin();
      timings.push(performance.now() - started);
      expect(health.status).toBe(200);
      expect(login.response.status).toBe(200);
      expect(health.headers.get("server-timing")).toBe('d1;desc="round trips";dur=0');
      expect(login.response.headers.get("server-timing")).toBe('d1;desc="round trips";dur=0');
    }
    timings.sort((a, b) => a - b);
    expect(timings[5]!, `healthcheck + login, median of 10: ${timings[5]} ms`).toBeLessThan(250);
  });

  it("batch mode: init creates the project and log stream, flush writes every record once with the client's ids", async () => {
    const logger = new galileo.GalileoLogger({ projectName: PROJECT, logStreamName: LOG_STREAM });
    ids.session = await logger.startSession({ name: "support chat", externalId: `ext-${RUN}`, metadata: { channel: "web" } });

    const trace = logger.startTrace({
      input: "What is the refund policy?",
      name: "refund question",
      metadata: { e2e: RUN, customer: "c-42" },
      tags: ["e2e", "batch"],
    });
    const workflow = logger.addWorkflowSpan({ input: "plan the answer", name: "answer workflow" });
    const agent = logger.addAgentSpan({ input: "route the question", name: "router", agentType: "router" });
    const llm = logger.addLlmSpan({
      input: [{ role: "user", content: "What is the refund policy?" }],
      output: { role: "assistant", content: "Refunds within 30 days." },
      model: "gpt-4o",
      numInputTokens: 12,
      numOutputTokens: 34,
      totalTokens: 46,
      temperature: 0.2,
      durationNs: 1500,
      metadata: { step: "draft" },
      tags: ["llm"],
    });
    const tool = logger.addToolSpan({ input: '{"order":"42"}', output: "refund approved", name: "refund_tool", toolCallId: "call_1", durationNs: 700 });
    const retriever = logger.addRetrieverSpan({ input: "refund policy", output: ["Refunds within 30 days", "Keep the receipt"], name: "kb search" });
    logger.conclude({ output: "routed" });
    logger.conclude({ output: "drafted" });
    logger.conclude({ output: "Refunds are accepted within 30 days.", durationNs: 9000 });
    const single = logger.addSingleLlmSpanTrace({ input: "hi", output: "hello", model: "gpt-4o-mini", metadata: { e2e: RUN } });

    const flushed = await logger.flush();
    expect(flushed.map((t) => t.id)).toEqual([trace.id, single.id]);
    Object.assign(ids, {
      trace: trace.id,
      workflow: workflow.id,
      agent: agent.id,
      llm: llm.id,
      tool: tool.id,
      retriever: retriever.id,
      single: single.id,
      singleSpan: single.spans[0]!.id,
    });

    // One read per database: the project, its log stream, and what landed in it.
    const projectOf = `SELECT id FROM projects WHERE organization_id = ${lit(service.tenant.organizationId)} AND name = ${lit(PROJECT)}`;
    const streamOf = `SELECT id FROM runs WHERE project_id IN (${projectOf}) AND kind = 'log_stream' AND name = ${lit(LOG_STREAM)}`;
    // (Two calls: the project and stream from the catalog, then what landed on the project's shard.)
    const [projects, streams] = await service.sql<Record<string, any>>(`${projectOf}; ${streamOf}`);
    const [records, metrics, metadata] = await service.sql<Record<string, any>>(
      `SELECT * FROM records WHERE run_id = ${lit(streams![0]?.id ?? "")};
       SELECT record_id, name, value FROM ${METRIC_ROWS} WHERE record_id = ${lit(llm.id)} ORDER BY name;
       SELECT record_id, key, value FROM record_metadata WHERE record_id = ${lit(trace.id)} ORDER BY key`,
    );
    expect(projects).toHaveLength(1);
    ids.project = projects![0]!.id;
    expect(streams).toHaveLength(1);
    ids.logStream = streams![0]!.id;
    const stored = byId(records as { id: string }[]) as Map<string, Record<string, any>>;
    expect(stored.size).toBe(9); // the session, 2 traces, 6 spans: each exactly once
    expect(new Set(stored.keys())).toEqual(new Set([ids.session, trace.id, workflow.id, agent.id, llm.id, tool.id, retriever.id, single.id, ids.singleSpan]));
    for (const record of stored.values()) expect(record.project_id).toBe(ids.project);

    expect(stored.get(ids.session)).toMatchObject({ record_type: "session", external_id: `ext-${RUN}`, has_children: 1 });
    expect(stored.get(trace.id)).toMatchObject({
      record_type: "trace", parent_id: ids.session, session_id: ids.session, trace_id: trace.id, has_children: 1, is_complete: 1,
      input: "What is the refund policy?", output: "Refunds are accepted within 30 days.",
    });
    expect(JSON.parse(stored.get(trace.id)!.user_metadata)).toEqual({ e2e: RUN, customer: "c-42" });
    expect(JSON.parse(stored.get(trace.id)!.tags)).toEqual(["e2e", "batch"]);
    expect(JSON.parse(stored.get(trace.id)!.metrics)).toMatchObject({ duration_ns: 9000 });
    const parents: [string, string, string][] = [
      [workflow.id, "workflow", trace.id],
      [agent.id, "agent", workflow.id],
      [llm.id, "llm", agent.id],
      [tool.id, "tool", agent.id],
      [retriever.id, "retriever", agent.id],
    ];
    for (const [id, type, parent] of parents) {
      expect(stored.get(id), type).toMatchObject({ record_type: "span", type, parent_id: parent, trace_id: trace.id, session_id: ids.session });
    }
    expect(stored.get(workflow.id)).toMatchObject({ output: "drafted", has_children: 1 });
    expect(stored.get(agent.id)).toMatchObject({ agent_type: "router", output: "routed", has_children: 1 });
    expect(stored.get(llm.id)).toMatchObject({ model: "gpt-4o", temperature: 0.2, has_children: 0, input_is_json: 1, output_is_json: 1 });
    expect(JSON.parse(stored.get(llm.id)!.input)).toEqual([{ role: "user", content: "What is the refund policy?" }]);
    expect(JSON.parse(stored.get(llm.id)!.user_metadata)).toEqual({ step: "draft" });
    expect(stored.get(tool.id)).toMatchObject({ tool_call_id: "call_1", output: "refund approved" });
    expect(JSON.parse(stored.get(retriever.id)!.output)).toEqual([
      { content: "Refunds within 30 days", metadata: {} },
      { content: "Keep the receipt", metadata: {} },
    ]);
    expect(stored.get(ids.singleSpan)).toMatchObject({ parent_id: single.id, model: "gpt-4o-mini", session_id: ids.session });
    expect(metrics).toEqual([
      // Computed at ingestion from gpt-4o's built-in price, USD per 1M tokens (docs/analytics.md).
      { record_id: llm.id, name: "cost", value: expect.closeTo((12 * 2.5 + 34 * 10) / 1e6, 12) },
      { record_id: llm.id, name: "duration_ns", value: 1500 },
      { record_id: llm.id, name: "num_input_tokens", value: 12 },
      { record_id: llm.id, name: "num_output_tokens", value: 34 },
      { record_id: llm.id, name: "num_total_tokens", value: 46 },
    ]);
    expect(metadata).toEqual([
      { record_id: trace.id, key: "customer", value: "c-42" },
      { record_id: trace.id, key: "e2e", value: RUN },
    ]);
  });

  it("sessions: startSession with a known external id finds the session again (text filter on external_id)", async () => {
    const logger = new galileo.GalileoLogger({ projectName: PROJECT, logStreamName: LOG_STREAM });
    const again = await logger.startSession({ name: "ignored for an existing session", externalId: `ext-${RUN}` });
    expect(again).toBe(ids.session);
    const followUp = logger.startTrace({ input: "And for sale items?", name: "follow-up", metadata: { e2e: RUN } });
    logger.addLlmSpan({ input: "And for sale items?", output: "Same policy.", model: "gpt-4o" });
    logger.conclude({ output: "Same policy." });
    expect(await logger.flush()).toHaveLength(1);
    ids.followUp = followUp.id;

    const [sessions, traces] = await service.sql<Record<string, any>>(
      `SELECT id FROM records WHERE run_id = ${lit(ids.logStream)} AND record_type = 'session' AND external_id = ${lit(`ext-${RUN}`)};
       SELECT id, session_id, parent_id FROM records WHERE id = ${lit(followUp.id)}`,
    );
    expect(sessions).toEqual([{ id: ids.session }]);
    expect(traces).toEqual([{ id: followUp.id, session_id: ids.session, parent_id: ids.session }]);
  });

  it("experiments: createExperiment, then traces logged into the experiment's run", async () => {
    const experiment = await galileo.createExperiment(`prompt-v2-${RUN}`, PROJECT);
    expect(experiment.id).toMatch(/^[0-9a-f-]{36}$/);
    const logger = new galileo.GalileoLogger({ projectName: PROJECT, experimentId: experiment.id });
    const trace = logger.startTrace({ input: "dataset row 1", name: "row 1", metadata: { e2e: RUN } });
    logger.addLlmSpan({ input: "dataset row 1", output: "answer 1", model: "gpt-4o" });
    logger.conclude({ output: "answer 1" });
    expect(await logger.flush()).toHaveLength(1);
    ids.experiment = experiment.id;
    ids.experimentTrace = trace.id;

    const [runs, records] = await service.sql<Record<string, any>>(
      `SELECT id, kind, project_id, task_type FROM runs WHERE id = ${lit(experiment.id)};
       SELECT record_type, run_id FROM records WHERE trace_id = ${lit(trace.id)} ORDER BY record_type DESC`,
    );
    expect(runs).toEqual([{ id: experiment.id, kind: "experiment", project_id: ids.project, task_type: "16" }]);
    expect(records).toEqual([
      { record_type: "trace", run_id: experiment.id },
      { record_type: "span", run_id: experiment.id },
    ]);
  });

  it("streaming mode: concurrent loggers create one project and one log stream; spans, updates and traces all land", async () => {
    const workers = [0, 1, 2].map((worker) => {
      const logger = new galileo.GalileoLogger({ projectName: STREAM_PROJECT, logStreamName: STREAM_LOG_STREAM, mode: "streaming" });
      const trace = logger.startTrace({ input: `question ${worker}`, name: `stream ${worker}`, metadata: { e2e: RUN, worker: String(worker) }, tags: ["stream"] });
      const workflow = logger.addWorkflowSpan({ input: "steps", name: "workflow" });
      const llm = logger.addLlmSpan({ input: [{ role: "user", content: `question ${worker}` }], output: { role: "assistant", content: `answer ${worker}` }, model: "gpt-4o", numInputTokens: 5 });
      logger.conclude({ output: `workflow ${worker} done`, durationNs: 4200 });
      const tool = logger.addToolSpan({ input: "lookup", output: "found", name: "lookup" });
      logger.conclude({ output: `final ${worker}` });
      return { logger, worker, trace: trace.id, spans: [workflow.id, llm.id, tool.id], workflow: workflow.id };
    });
    await Promise.all(workers.map((w) => settle(w.logger)));
    await Promise.all(workers.map((w) => w.logger.terminate()));

    // terminate() gives up waiting after five seconds: poll until the last request has landed
    // (requests of one logger may land in any order: on a busy machine a workflow's conclusion
    // can come after its trace's).
    const traceIds = workers.map((w) => w.trace);
    const concluded = new Set([...traceIds, ...workers.map((w) => w.workflow)]);
    const projectOf = `SELECT id FROM projects WHERE organization_id = ${lit(service.tenant.organizationId)} AND name = ${lit(STREAM_PROJECT)}`;
    const [projects, streams, records, held] = await until(
      "every streamed trace complete",
      () =>
        service.sql<Record<string, any>>(
          `${projectOf};
           SELECT id, name FROM runs WHERE project_id IN (${projectOf});
           SELECT * FROM records WHERE trace_id IN (${traceIds.map(lit).join(", ")});
           SELECT record_id FROM record_patches WHERE record_id IN (${traceIds.map(lit).join(", ")})`,
        ),
      ([, , found]) =>
        found!.length === 12 &&
        found!.filter((r) => r.record_type === "trace").every((r) => r.is_complete === 1) &&
        found!.filter((r) => concluded.has(r.id)).every((r) => r.output !== null),
    );
    expect(projects).toHaveLength(1);
    const projectId = projects![0]!.id as string;
    expect(streams).toEqual([{ id: expect.any(String), name: STREAM_LOG_STREAM }]);
    const runId = streams![0]!.id as string;
    const stored = byId(records as ({ id: string } & Record<string, any>)[]);
    expect(held).toEqual([]);
    for (const w of workers) {
      expect(stored.get(w.trace)).toMatchObject({ run_id: runId, project_id: projectId, output: `final ${w.worker}`, is_complete: 1, has_children: 1 });
      expect(JSON.parse(stored.get(w.trace)!.user_metadata)).toEqual({ e2e: RUN, worker: String(w.worker) });
      for (const id of w.spans) expect(stored.get(id)).toMatchObject({ run_id: runId, trace_id: w.trace, is_complete: 1 });
      expect(stored.get(w.workflow)).toMatchObject({ parent_id: w.trace, output: `workflow ${w.worker} done`, has_children: 1 });
      expect(stored.get(w.spans[1]!)).toMatchObject({ parent_id: w.workflow, type: "llm" });
      expect(stored.get(w.spans[2]!)).toMatchObject({ parent_id: w.trace, type: "tool" });
    }
    ids.streamProject = projectId;
    ids.streamRun = runId;
    ids.streamTrace = workers[0]!.trace;
    ids.streamWorkflow = workers[0]!.workflow;
  });

  it("streaming mode continues a distributed trace: GalileoLogger.create with a trace id and a span id", async () => {
    // Another service picks the trace up: the SDK reads the trace and the span by id, then logs under the span.
    const logger = await galileo.GalileoLogger.create({
      projectName: STREAM_PROJECT,
      logStreamName: STREAM_LOG_STREAM,
      mode: "streaming",
      traceId: ids.streamTrace,
      spanId: ids.streamWorkflow,
    });
    const llm = logger.addLlmSpan({ input: "continued elsewhere", output: "from another service", model: "gpt-4o" });
    await settle(logger);
    await logger.terminate();
    const [found] = await until(
      "the continued span",
      () => service.sql<Record<string, any>>(`SELECT * FROM records WHERE id = ${lit(llm.id)}`),
      ([records]) => records!.length === 1,
    );
    expect(found![0]).toMatchObject({ trace_id: ids.streamTrace, parent_id: ids.streamWorkflow, run_id: ids.streamRun, is_complete: 1, type: "llm" });
  });

  it("streaming over HTTP in the worst order: a trace's update, then its span, then the trace", async () => {
    const { body: token } = await apiKeyLogin();
    // As the SDK does, a 503 is sent again after its Retry-After (the writes merge, so a second
    // copy changes nothing): under a full suite's load a write met one (wrangler dev's proxy or
    // a busy local D1) and failed this test, which asserts the order of arrival, not that.
    const call = async (method: string, path: string, body: unknown): Promise<Response> => {
      for (let attempt = 1; ; attempt += 1) {
        const response = await fetch(`${service.apiUrl}/projects/${ids.streamProject}/${path}`, {
          method,
          headers: { authorization: `Bearer ${token.access_token}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        if (response.status !== 503 || attempt === 3) return response;
        console.log(`${method} ${path}: 503 (${(await response.text()).slice(0, 200)}), sent again`);
        await new Promise((resolve) => setTimeout(resolve, Math.min(Number(response.headers.get("retry-after") ?? 1), 2) * 1000));
      }
    };
    const traceId = crypto.randomUUID();
    const spanId = crypto.randomUUID();
    const run = { log_stream_id: ids.streamRun, experiment_id: null };

    const update = await call("PATCH", `traces/${traceId}`, { ...run, trace_id: traceId, output: "done", tags: ["late"], is_complete: true });
    expect(update.status).toBe(200);
    expect(await update.json()).toMatchObject({ pending: true, records_count: 0 });
    const span = await call("POST", "spans", { ...run, trace_id: traceId, parent_id: traceId, reliable: false, spans: [{ type: "tool", id: spanId, name: "t", input: "in", output: "out" }] });
    expect(span.status).toBe(200);
    const trace = await call("POST", "traces", { ...run, is_complete: false, traces: [{ type: "trace", id: traceId, name: "late trace", input: "q", user_metadata: { e2e: RUN } }] });
    expect(trace.status).toBe(200);

    const stored = byId(await rows<{ id: string } & Record<string, any>>(`SELECT * FROM records WHERE trace_id = ${lit(traceId)}`));
    expect(stored.get(traceId)).toMatchObject({ output: "done", tags: '["late"]', is_complete: 1, has_children: 1 });
    expect(stored.get(spanId)).toMatchObject({ parent_id: traceId, is_complete: 1 });
  });

  it("reads back through getTraces, getSpans and getSessions", async () => {
    const traces = await galileo.getTraces({
      projectId: ids.project,
      logStreamId: ids.logStream,
      filters: [{ columnId: "user_metadata.e2e", operator: "eq", value: RUN, type: "text" }],
      limit: 10,
    } as never);
    const traceRecords = (traces as { records: Record<string, any>[] }).records;
    expect(new Set(traceRecords.map((r) => r.id))).toEqual(new Set([ids.trace, ids.single, ids.followUp]));
    const main = traceRecords.find((r) => r.id === ids.trace)!;
    expect(main).toMatchObject({ type: "trace", name: "refund question", sessionId: ids.session, isComplete: true, hasChildren: true });
    expect(main.userMetadata).toEqual({ e2e: RUN, customer: "c-42" });
    expect(main.metrics).toMatchObject({ durationNs: 9000 });

    // Sorted and paged as the SDK asks: sort without sort_type, top-level limit and starting_token.
    const page = async (startingToken: number) =>
      (await galileo.getTraces({
        projectId: ids.project,
        logStreamId: ids.logStream,
        filters: [{ columnId: "user_metadata.e2e", operator: "eq", value: RUN, type: "text" }],
        sort: { columnId: "created_at", ascending: true },
        limit: 2,
        startingToken,
      } as never)) as { records: { id: string }[]; nextStartingToken: number | null; paginated: boolean };
    const first = await page(0);
    expect(first).toMatchObject({ paginated: true, nextStartingToken: 2 });
    const second = await page(first.nextStartingToken!);
    expect(second).toMatchObject({ paginated: false, nextStartingToken: null });
    expect([...first.records, ...second.records].map((r) => r.id)).toEqual([ids.trace, ids.single, ids.followUp]);

    const spans = await galileo.getSpans({
      projectId: ids.project,
      logStreamId: ids.logStream,
      filters: [{ columnId: "trace_id", operator: "eq", value: ids.trace, type: "id" }],
      limit: 10,
    } as never);
    const spanRecords = (spans as { records: Record<string, any>[] }).records;
    expect(new Set(spanRecords.map((r) => r.id))).toEqual(new Set([ids.workflow, ids.agent, ids.llm, ids.tool, ids.retriever]));
    const llm = spanRecords.find((r) => r.id === ids.llm)!;
    expect(llm).toMatchObject({ type: "llm", model: "gpt-4o", parentId: ids.agent, traceId: ids.trace });
    expect(llm.input).toEqual([{ role: "user", content: "What is the refund policy?" }]);
    expect(llm.output).toMatchObject({ role: "assistant", content: "Refunds within 30 days." });

    const sessions = await galileo.getSessions({ projectId: ids.project, logStreamId: ids.logStream, limit: 10 } as never);
    const sessionRecords = (sessions as { records: Record<string, any>[] }).records;
    expect(sessionRecords.map((r) => r.id)).toContain(ids.session);
    expect(sessionRecords.find((r) => r.id === ids.session)).toMatchObject({ type: "session", externalId: `ext-${RUN}` });

    const experimentTraces = await galileo.getTraces({ projectId: ids.project, experimentId: ids.experiment, limit: 10 } as never);
    expect((experimentTraces as { records: { id: string }[] }).records.map((r) => r.id)).toEqual([ids.experimentTrace]);
  });

  it("lists available columns for spans, traces and sessions", async () => {
    const client = new galileo.GalileoApiClient();
    await client.init({ projectId: ids.project, logStreamId: ids.logStream });
    const spans = (await client.getSpansAvailableColumns({ logStreamId: ids.logStream } as never)) as { columns: { id: string; isEmpty: boolean }[] };
    const spanColumns = byId(spans.columns);
    expect(spanColumns.get("model")).toMatchObject({ isEmpty: false });
    expect(spanColumns.get("agent_type")).toMatchObject({ isEmpty: false });
    expect(spanColumns.has("metrics/num_input_tokens")).toBe(true);
    const traces = (await client.getTracesAvailableColumns({ logStreamId: ids.logStream } as never)) as { columns: { id: string }[] };
    expect(traces.columns.map((c) => c.id)).toEqual(expect.arrayContaining(["input", "output", "tags", "session_id", "metrics/duration_ns"]));
    expect(traces.columns.map((c) => c.id)).not.toContain("model");
    const sessions = (await client.getSessionsAvailableColumns({ logStreamId: ids.logStream } as never)) as { columns: { id: string }[] };
    expect(sessions.columns.map((c) => c.id)).toEqual(expect.arrayContaining(["external_id", "name"]));
    expect(sessions.columns.map((c) => c.id)).not.toContain("tags");
  });

  it("partial_search through galileo-generated finds an SDK-logged trace by its metadata; answers parse", async () => {
    const client = new generated.GalileoGenerated({ serverURL: service.apiUrl });
    const found = await client.trace.queryPartialTracesProjectsProjectIdTracesPartialSearchPost({}, {
      projectId: ids.project,
      body: {
        logStreamId: ids.logStream,
        filters: [{ columnId: "user_metadata.customer", operator: "eq", value: "c-42", type: "text" }],
        selectColumns: { columnIds: ["id", "name", "created_at", "user_metadata.customer", "user_metadata.e2e", "is_complete"] },
        limit: 5,
      },
    });
    expect(found.records).toHaveLength(1);
    const record = found.records![0] as Record<string, any>;
    expect(record).toMatchObject({ id: ids.trace, type: "trace", name: "refund question", isComplete: true });
    expect(record.userMetadata).toEqual({ customer: "c-42", e2e: RUN });
    expect(record.createdAt).toBeInstanceOf(Date);
    expect(found).toMatchObject({ paginated: false, startingToken: 0 });

    const spans = await client.trace.queryPartialSpansProjectsProjectIdSpansPartialSearchPost({}, {
      projectId: ids.project,
      body: {
        logStreamId: ids.logStream,
        filters: [{ columnId: "trace_id", operator: "eq", value: ids.trace, type: "id" }],
        selectColumns: { columnIds: ["id", "type", "parent_id", "metrics/num_input_tokens"] },
        limit: 10,
      },
    });
    expect(new Set(spans.records!.map((r) => (r as { id: string }).id))).toEqual(new Set([ids.workflow, ids.agent, ids.llm, ids.tool, ids.retriever]));
    expect(spans.records!.find((r) => (r as { id: string }).id === ids.llm)).toMatchObject({ type: "llm", metrics: { numInputTokens: 12 } }); // camel-cased by the generated schema

    const sessions = await client.trace.queryPartialSessionsProjectsProjectIdSessionsPartialSearchPost({}, {
      projectId: ids.project,
      body: {
        logStreamId: ids.logStream,
        filters: [{ columnId: "external_id", operator: "eq", value: `ext-${RUN}`, type: "text" }],
        selectColumns: { columnIds: ["id", "external_id"] },
      },
    });
    expect(sessions.records).toEqual([expect.objectContaining({ id: ids.session, type: "session", externalId: `ext-${RUN}` })]);
  });
});
