/**
 * Galileo's Python SDK against the service, replayed request by request (test/support/python-sdk.ts
 * says where each request comes from in the SDK's source): `GalileoLogger` by project name and by
 * id, sessions, flush, the `@log` decorator under `galileo_context`, distributed mode, experiments,
 * and `galileo.search`, with every form of `GALILEO_API_URL`. Every answer is parsed against the
 * fields the SDK's models require, and every trace logged is read back: nothing is lost.
 */
import { beforeAll, describe, expect, it } from "vitest";
import {
  BASE_URL_FORMS,
  ExperimentResponse,
  ListLogStreamResponse,
  LogRecordsQueryResponse,
  LogStreamResponse,
  ProjectCreateResponse,
  ProjectDB,
  PythonSdkWire,
  SessionCreated,
  SessionSearch,
  Token,
  User,
} from "./support/python-sdk";
import { createTenant, type Tenant } from "./support/tenants";

let tenant: Tenant;

beforeAll(async () => {
  tenant = await createTenant("member");
});

/** A naive `datetime.now()` as pydantic dumps it (no offset): the SDK's usual created_at. */
const naiveNow = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString().replace("Z", "").padEnd(26, "0");

/** `BaseStep.model_dump(mode="json")`: every field, nulls included. */
function step(type: string, fields: Record<string, unknown>): Record<string, unknown> {
  return {
    type,
    input: "",
    redacted_input: null,
    output: null,
    redacted_output: null,
    name: type,
    created_at: naiveNow(),
    user_metadata: {},
    tags: [],
    status_code: 200,
    metrics: { duration_ns: 1_500_000 },
    external_id: null,
    dataset_input: null,
    dataset_output: null,
    dataset_metadata: {},
    id: crypto.randomUUID(),
    ...fields,
  };
}

const message = (role: string, content: string) => ({ content, role, tool_call_id: null, tool_calls: null });

function llmSpan(fields: Record<string, unknown> = {}) {
  return step("llm", {
    name: "llm",
    input: [message("system", "be brief"), message("user", "What is 2+2?")],
    output: message("assistant", "4"),
    tools: null,
    model: "gpt-4o",
    temperature: 0.2,
    finish_reason: null,
    events: null,
    metrics: { duration_ns: 900_000, num_input_tokens: 12, num_output_tokens: 1, num_total_tokens: 13, time_to_first_token_ns: null },
    ...fields,
  });
}

/** A trace as `flush()` sends it: a workflow with llm, retriever and tool spans, an agent beside. */
function fullTrace(name: string, metadata: Record<string, string> = {}) {
  return step("trace", {
    name,
    input: "What is 2+2?",
    output: "4",
    user_metadata: metadata,
    tags: ["python"],
    spans: [
      step("workflow", {
        name: "answer",
        input: '{"question": "What is 2+2?"}',
        output: "4",
        spans: [
          step("retriever", { name: "docs", input: "2+2", output: [{ content: "arithmetic", metadata: { source: "book" } }] }),
          llmSpan(),
          step("tool", { name: "calculator", input: "2+2", output: "4", tool_call_id: null }),
        ],
      }),
      step("agent", { name: "planner", input: "plan", output: "done", agent_type: "default", spans: [] }),
    ],
  });
}

/** `TracesIngestRequest(...).model_dump(mode="json")` as `Traces.ingest_traces` sends it. */
function tracesIngestRequest(traces: unknown[], run: { log_stream_id?: string | null; experiment_id?: string | null }, extra: Record<string, unknown> = {}) {
  return {
    log_stream_id: run.log_stream_id ?? null,
    experiment_id: run.experiment_id ?? null,
    logging_method: "api_direct",
    client_version: null,
    reliable: false,
    traces,
    session_id: null,
    session_external_id: null,
    is_complete: true,
    ...extra,
  };
}

/** `LogRecordsQueryRequest(...).to_dict()` as `galileo.search` builds it. */
function searchBody(run: { log_stream_id?: string | null; experiment_id?: string | null }, filters: unknown[] = []) {
  return {
    starting_token: 0,
    limit: 100,
    log_stream_id: run.log_stream_id ?? null,
    experiment_id: run.experiment_id ?? null,
    filters,
    sort: { column_id: "created_at", ascending: false, sort_type: "column" },
    truncate_fields: false,
    include_counts: false,
    include_code_metric_metadata: false,
  };
}

const routeOf = (wire: PythonSdkWire) => wire.sent.map((r) => `${r.method} ${r.path}`);

/** What `GalileoLogger(project=..., log_stream=...)` sends after the configuration. */
async function startLogger(wire: PythonSdkWire, projectName: string, logStreamName: string) {
  const found = await wire.getProjectsByName(projectName);
  expect(found.status).toBe(200);
  let projectId: string;
  if (found.body.length === 0) {
    const created = await wire.createProject(projectName);
    expect(created.status).toBe(200);
    projectId = ProjectCreateResponse.parse(created.body).id as string;
  } else {
    projectId = ProjectDB.parse(found.body[0]).id as string;
  }
  let logStreamId: string | undefined;
  for (let token: number | null | undefined = 0; token !== null && token !== undefined; ) {
    const page = await wire.listLogStreams(projectId, token);
    expect(page.status).toBe(200);
    const parsed = ListLogStreamResponse.parse(page.body);
    logStreamId ??= parsed.log_streams.find((stream) => stream.name === logStreamName)?.id as string | undefined;
    token = parsed.paginated ? parsed.next_starting_token : null;
  }
  if (!logStreamId) {
    const created = await wire.createLogStream(projectId, logStreamName);
    expect(created.status).toBe(200);
    logStreamId = LogStreamResponse.parse(created.body).id as string;
  }
  // The ingest service is not ours: anything but a 2xx sends the SDK to the API's routes.
  const probe = await wire.probeIngestService();
  expect(probe.status).toBe(404);
  expect(probe.body).toEqual({ detail: "Not Found" });
  return { projectId, logStreamId };
}

async function readBack(wire: PythonSdkWire, projectId: string, family: "traces" | "spans" | "sessions", run: { log_stream_id?: string; experiment_id?: string }, filters: unknown[] = []) {
  const answer = await wire.search(projectId, family, searchBody(run, filters));
  expect(answer.status).toBe(200);
  return LogRecordsQueryResponse.parse(answer.body).records as Record<string, unknown>[];
}

describe.each(BASE_URL_FORMS)("GALILEO_API_URL at $name", ({ apiUrl }) => {
  // Where urljoin puts the relative routes, and where the f-string puts the ingest probe.
  const prefix = new URL("healthcheck", apiUrl).pathname.replace(/healthcheck$/, "");
  const probe = `${new URL(apiUrl).pathname.replace(/\/+$/, "")}/ingest/healthz`;
  const fresh = () => new PythonSdkWire(apiUrl, tenant.apiKey);

  it("configures: healthcheck, API key login, current user as galileo-core's User", async () => {
    const wire = fresh();
    const { health, login, user } = await wire.configure();
    expect(health.status).toBe(200);
    Token.parse(login.body);
    expect(user.status).toBe(200);
    expect(User.parse(user.body)).toMatchObject({ id: tenant.userId, email: tenant.email, role: "user" });
    expect(routeOf(wire)).toEqual([`GET ${prefix}healthcheck`, `POST ${prefix}login/api_key`, `GET ${prefix}current_user`]);
  });

  it("configures with a username and password: the login form's extra auth_method is ignored", async () => {
    const wire = fresh();
    const { login, user } = await wire.configureWithPassword(tenant.email, tenant.password);
    expect(login.status).toBe(200);
    Token.parse(login.body);
    expect(User.parse(user.body).id).toBe(tenant.userId);
    expect(routeOf(wire)).toEqual([`GET ${prefix}healthcheck`, `POST ${prefix}login`, `GET ${prefix}current_user`]);
  });

  it("GalileoLogger by project and log stream name: creates both when missing, flushes, finds them again", async () => {
    const wire = fresh();
    await wire.configure();
    const projectName = `py-${crypto.randomUUID()}`;
    const { projectId, logStreamId } = await startLogger(wire, projectName, "production");
    const traces = [fullTrace("first", { customer: "c-42" }), fullTrace("second")];
    const flushed = await wire.ingestTraces(projectId, tracesIngestRequest(traces, { log_stream_id: logStreamId }));
    expect(flushed.status).toBe(200);
    expect(flushed.body).toMatchObject({ project_id: projectId, traces_count: 2, records_count: 12 });
    expect(routeOf(wire).slice(3)).toEqual([
      "GET /projects",
      "POST /projects",
      `GET /projects/${projectId}/log_streams/paginated`,
      `POST /projects/${projectId}/log_streams`,
      `GET ${probe}`,
      `POST /v2/projects/${projectId}/traces`,
    ]);

    // A second process: the project and the stream are found by name, nothing is created twice.
    const again = fresh();
    await again.configure();
    expect(await startLogger(again, projectName, "production")).toEqual({ projectId, logStreamId });
    expect(routeOf(again).slice(3)).toEqual(["GET /projects", `GET /projects/${projectId}/log_streams/paginated`, `GET ${probe}`]);
    const found = await again.getProjectsByName(projectName);
    expect(found.body).toHaveLength(1);
    expect(ProjectDB.parse(found.body[0]).created_by_user).toMatchObject({ id: tenant.userId, email: tenant.email });

    // Nothing lost: both traces with every span, as logged.
    const stored = await readBack(again, projectId, "traces", { log_stream_id: logStreamId });
    expect(stored.map((record) => record.id).sort()).toEqual(traces.map((t) => t.id).sort());
    const spans = await readBack(again, projectId, "spans", { log_stream_id: logStreamId });
    expect(spans).toHaveLength(10);
    expect(new Set(spans.map((record) => record.type))).toEqual(new Set(["workflow", "retriever", "llm", "tool", "agent"]));
  });

  it("GalileoLogger by project and log stream id: no lookups, straight to the flush", async () => {
    const setup = fresh();
    await setup.configure();
    const { projectId, logStreamId } = await startLogger(setup, `py-${crypto.randomUUID()}`, "default");
    const wire = fresh();
    await wire.configure();
    // With ids, `_init_project` and `_init_log_stream` are skipped; only the ingest probe remains.
    expect((await wire.probeIngestService()).status).toBe(404);
    const trace = fullTrace("by-id");
    expect((await wire.ingestTraces(projectId, tracesIngestRequest([trace], { log_stream_id: logStreamId }))).status).toBe(200);
    expect(routeOf(wire).slice(3)).toEqual([`GET ${probe}`, `POST /v2/projects/${projectId}/traces`]);
    expect((await readBack(wire, projectId, "traces", { log_stream_id: logStreamId })).map((r) => r.id)).toEqual([trace.id]);
  });

  it("sessions: start_session searches by external id, creates, flushes into it, and finds it again", async () => {
    const wire = fresh();
    await wire.configure();
    const { projectId, logStreamId } = await startLogger(wire, `py-${crypto.randomUUID()}`, "default");
    const externalId = `conversation-${crypto.randomUUID()}`;
    // `LogRecordsSearchRequest(filters=[LogRecordsSearchFilter(column_id=...)])`: dumped without
    // aliases, so the column is under `name`.
    const searchSessions = () =>
      wire.searchSessions(projectId, {
        log_stream_id: logStreamId,
        experiment_id: null,
        filters: [{ type: "text", name: "external_id", value: externalId, operator: "eq" }],
      });
    const none = await searchSessions();
    expect(none.status).toBe(200);
    expect(SessionSearch.parse(none.body).records).toEqual([]);
    const created = await wire.createSession(projectId, {
      log_stream_id: logStreamId,
      experiment_id: null,
      name: "support chat",
      previous_session_id: null,
      external_id: externalId,
      user_metadata: { channel: "web" },
    });
    expect(created.status).toBe(200);
    const sessionId = SessionCreated.parse(created.body).id;
    const trace = fullTrace("turn 1");
    const flushed = await wire.ingestTraces(projectId, tracesIngestRequest([trace], { log_stream_id: logStreamId }, { session_id: sessionId, session_external_id: externalId }));
    expect(flushed.status).toBe(200);
    expect(flushed.body.session_id).toBe(sessionId);

    const found = await searchSessions();
    expect(SessionSearch.parse(found.body).records.map((record) => record.id)).toEqual([sessionId]);
    const sessions = await readBack(wire, projectId, "sessions", { log_stream_id: logStreamId });
    expect(sessions.map((record) => record.id)).toEqual([sessionId]);
    const traces = await readBack(wire, projectId, "traces", { log_stream_id: logStreamId });
    expect(traces.map((record) => [record.id, record.session_id])).toEqual([[trace.id, sessionId]]);
  });

  it("@log under galileo_context: the decorated calls become one trace of nested workflow spans on flush", async () => {
    const wire = fresh();
    await wire.configure();
    // galileo_context(project=..., log_stream=...) -> GalileoLoggerSingleton -> GalileoLogger(...).
    const { projectId, logStreamId } = await startLogger(wire, `py-${crypto.randomUUID()}`, "decorated");
    // @log def answer(question): ...  calling @log(span_type="llm") def call_model(prompt): ...
    const inner = llmSpan({ name: "call_model", input: [message("user", '{"prompt": "2+2"}')], output: message("assistant", "4") });
    const outer = step("workflow", { name: "answer", input: '{"question": "What is 2+2?"}', output: "4", spans: [inner] });
    const trace = step("trace", { name: "answer", input: '{"question": "What is 2+2?"}', output: "4", spans: [outer] });
    const flushed = await wire.ingestTraces(projectId, tracesIngestRequest([trace], { log_stream_id: logStreamId }));
    expect(flushed.status).toBe(200);
    const spans = await readBack(wire, projectId, "spans", { log_stream_id: logStreamId });
    const byId = new Map(spans.map((record) => [record.id, record]));
    expect(byId.get(outer.id as string)).toMatchObject({ type: "workflow", parent_id: trace.id, trace_id: trace.id });
    expect(byId.get(inner.id as string)).toMatchObject({ type: "llm", parent_id: outer.id, trace_id: trace.id, model: "gpt-4o" });
  });

  it("distributed mode: trace, spans and updates as they happen, continued downstream by trace and span id", async () => {
    const wire = fresh();
    await wire.configure();
    const { projectId, logStreamId } = await startLogger(wire, `py-${crypto.randomUUID()}`, "default");
    const run = { log_stream_id: logStreamId };
    // start_trace: the trace alone, incomplete.
    const trace = step("trace", { name: "request", input: "What is 2+2?", spans: [] });
    const started = await wire.ingestTraces(projectId, tracesIngestRequest([trace], run, { reliable: true, is_complete: false }));
    expect(started.status).toBe(200);
    // add_workflow_span, then add_llm_span under it: `SpansIngestRequest.model_dump(mode="json")`.
    const workflow = step("workflow", { name: "answer", input: "2+2", spans: [] });
    const spanRequest = (spanBody: unknown, parentId: string) => ({
      log_stream_id: logStreamId,
      experiment_id: null,
      logging_method: "api_direct",
      client_version: null,
      reliable: true,
      spans: [spanBody],
      trace_id: trace.id,
      parent_id: parentId,
    });
    expect((await wire.ingestSpans(projectId, spanRequest(workflow, trace.id as string))).status).toBe(200);
    const llm = llmSpan();
    expect((await wire.ingestSpans(projectId, spanRequest(llm, workflow.id as string))).status).toBe(200);
    // Downstream service: GalileoLogger(mode="distributed", trace_id=..., span_id=...) makes local
    // stubs (no request) and posts its spans under the propagated span.
    const downstream = fresh();
    await downstream.configure();
    const tool = step("tool", { name: "calculator", input: "2+2", output: "4", tool_call_id: null });
    expect((await downstream.ingestSpans(projectId, spanRequest(tool, workflow.id as string))).status).toBe(200);
    // conclude() of the workflow span, then of the trace: `SpanUpdateRequest` / `TraceUpdateRequest`.
    const spanUpdate = await wire.updateSpan(projectId, workflow.id as string, {
      log_stream_id: logStreamId,
      experiment_id: null,
      logging_method: "api_direct",
      client_version: null,
      reliable: true,
      span_id: workflow.id,
      input: null,
      output: "4",
      tags: [],
      status_code: 200,
      duration_ns: 2_000_000,
    });
    expect(spanUpdate.status).toBe(200);
    const traceUpdate = await wire.updateTrace(projectId, trace.id as string, {
      log_stream_id: logStreamId,
      experiment_id: null,
      logging_method: "api_direct",
      client_version: null,
      reliable: true,
      trace_id: trace.id,
      input: null,
      output: "4",
      status_code: 200,
      tags: [],
      is_complete: true,
      duration_ns: 3_000_000,
    });
    expect(traceUpdate.status).toBe(200);
    const stored = await wire.getTrace(projectId, trace.id as string);
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({ id: trace.id, output: "4", is_complete: true });
    const spans = await readBack(wire, projectId, "spans", run);
    expect(Object.fromEntries(spans.map((record) => [record.id, record.parent_id]))).toEqual({
      [workflow.id as string]: trace.id,
      [llm.id as string]: workflow.id,
      [tool.id as string]: workflow.id,
    });
    expect(spans.find((record) => record.id === workflow.id)).toMatchObject({ output: "4" });
  });

  it("experiments: created by name, listed, and logged to with experiment_id", async () => {
    const wire = fresh();
    await wire.configure();
    const { projectId } = await startLogger(wire, `py-${crypto.randomUUID()}`, "default");
    const created = await wire.createExperiment(projectId, "prompt-v2");
    expect(created.status).toBe(200);
    const experiment = ExperimentResponse.parse(created.body);
    expect(created.body).toMatchObject({ name: "prompt-v2", task_type: 16 });
    const listed = await wire.listExperiments(projectId);
    expect(listed.status).toBe(200);
    expect(listed.body.map((e: unknown) => ExperimentResponse.parse(e).id)).toEqual([experiment.id]);
    // The experiment runner's GalileoLogger(experiment_id=...): log_stream_id stays null.
    const trace = fullTrace("row 1");
    const flushed = await wire.ingestTraces(projectId, tracesIngestRequest([trace], { experiment_id: experiment.id as string }));
    expect(flushed.status).toBe(200);
    const stored = await readBack(wire, projectId, "traces", { experiment_id: experiment.id as string });
    expect(stored.map((record) => record.id)).toEqual([trace.id]);
  });

  it("galileo.search: get_traces, get_spans, get_sessions with filters and sort, parsed by LogRecordsQueryResponse", async () => {
    const wire = fresh();
    await wire.configure();
    const { projectId, logStreamId } = await startLogger(wire, `py-${crypto.randomUUID()}`, "default");
    const session = await wire.createSession(projectId, { log_stream_id: logStreamId, experiment_id: null, name: null, previous_session_id: null, external_id: null, user_metadata: null });
    const sessionId = SessionCreated.parse(session.body).id;
    const older = fullTrace("older", { customer: "c-1" });
    const newer = fullTrace("newer", { customer: "c-2" });
    newer.created_at = naiveNow(60_000);
    expect((await wire.ingestTraces(projectId, tracesIngestRequest([older, newer], { log_stream_id: logStreamId }, { session_id: sessionId }))).status).toBe(200);
    const run = { log_stream_id: logStreamId };
    // Default sort: created_at descending.
    expect((await readBack(wire, projectId, "traces", run)).map((record) => record.id)).toEqual([newer.id, older.id]);
    // TextFilter(column_id=..., operator="eq", value=...).to_dict()
    const filtered = await readBack(wire, projectId, "traces", run, [{ column_id: "user_metadata.customer", operator: "eq", value: "c-1", case_sensitive: true, type: "text" }]);
    expect(filtered.map((record) => record.id)).toEqual([older.id]);
    const llmSpans = await readBack(wire, projectId, "spans", run, [{ column_id: "type", operator: "eq", value: "llm", case_sensitive: true, type: "text" }]);
    expect(llmSpans).toHaveLength(2);
    expect(llmSpans.every((record) => record.type === "llm" && record.session_id === sessionId)).toBe(true);
    const sessions = await readBack(wire, projectId, "sessions", run);
    expect(sessions.map((record) => record.id)).toEqual([sessionId]);
    // Paging as the SDK's callers do: starting_token and limit.
    const page = await wire.search(projectId, "traces", { ...searchBody(run), limit: 1, starting_token: 1 });
    expect(LogRecordsQueryResponse.parse(page.body)).toMatchObject({ paginated: false, next_starting_token: null, records: [{ id: older.id }] });
  });
});
