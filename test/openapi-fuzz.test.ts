/**
 * Fuzzing from the OpenAPI document (issue 9, robustness suite): for EVERY operation of
 * `/openapi.json`, fast-check draws requests from the operation's own declaration (path and
 * query parameters, body schema, media types) and from what clients get wrong (mutated and
 * malformed bodies, wrong media types, missing, foreign or broken credentials, ids of another
 * organization, prototype keys, boundary lengths), sends them through the worker's real entry
 * point, and checks every answer against the document:
 *
 * - never a 5xx;
 * - a status the document declares for that operation;
 * - a body that matches the schema declared for that status (validated as JSON Schema 2020-12);
 * - the headers the contract promises: `x-request-id` always, `WWW-Authenticate` on a 401,
 *   `Retry-After` on a 429 and a 503.
 *
 * Several organizations with the same small dataset share the load, so that the per-
 * organization request rate (1000 per 10 s) is not what answers. A failure prints fast-check's
 * seed and the shrunk request. `FUZZ_RUNS=500 npx vitest run test/openapi-fuzz.test.ts` sends
 * more requests per operation (default 30).
 */
import { Validator } from "@cfworker/json-schema";
import { env, SELF } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { type JsonSchema, NASTY_STRINGS, type Vocabulary, valueOf } from "./support/schema-arbitrary";
import { type Tenant, addUser, createTenant } from "./support/tenants";

const BASE = "http://trace-store.test";
const RUNS_PER_OPERATION = 30;

interface Operation {
  method: string;
  path: string;
  parameters?: { name: string; in: "path" | "query" | "header"; required?: boolean; schema: JsonSchema }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { content?: Record<string, { schema: JsonSchema }>; headers?: Record<string, unknown> }>;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, Omit<Operation, "method" | "path">>>;
  components: { schemas: Record<string, JsonSchema> };
}

/** One organization's dataset: every kind of id a request can name. */
interface Dataset {
  tenant: Tenant;
  member: Tenant;
  token: string;
  /** A bearer token of its own for a valid logout to end (the fuzz's other requests keep `token`). */
  logoutToken: string;
  ids: string[];
  projectId: string;
  logStreamId: string;
  experimentId: string;
  /** The project's annotation templates (`template_id` also names the queues' templates). */
  projectTemplateIds: string[];
  /** The ids by the name of the path parameter that takes them. */
  named: Record<string, string[]>;
}

let doc: OpenApiDocument;
let operations: Operation[];
const datasets: Dataset[] = [];
let stranger: Dataset;

const WORDS = [
  "input", "output", "name", "created_at", "updated_at", "id", "type", "model", "tags", "trace_id", "span_id", "session_id",
  "parent_id", "status_code", "is_complete", "has_children", "metrics/toxicity", "metrics/duration_ns", "metrics/constructor",
  "user_metadata.customer", "user_metadata.__proto__", "dataset_metadata.split", "llm", "tool", "agent", "workflow", "retriever",
  "control", "trace", "session", "customer", "acme", "needle", "gpt-4o", "prod", "eq", "contains", "one_of", "password",
];

async function seed(tenant: Tenant): Promise<Dataset> {
  const member = await addUser(tenant, "member");
  const projectId = (await call("/v2/projects", { as: tenant, body: { name: "fuzz" } })).body.id as string;
  const logStreamId = (await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name: "ls" } })).body.id as string;
  const experimentId = (await call(`/v2/projects/${projectId}/experiments`, { as: tenant, body: { name: "exp" } })).body.id as string;
  const sessionId = crypto.randomUUID();
  const traceId = crypto.randomUUID();
  const spanIds = [crypto.randomUUID(), crypto.randomUUID()];
  expect((await call(`/v2/projects/${projectId}/sessions`, { as: tenant, body: { log_stream_id: logStreamId, id: sessionId, name: "s", user_metadata: { customer: "acme" } } })).status).toBe(200);
  const ingest = await call(`/v2/projects/${projectId}/traces`, {
    as: tenant,
    body: {
      log_stream_id: logStreamId,
      session_id: sessionId,
      traces: [
        {
          id: traceId,
          name: "answer",
          input: "find the needle",
          output: "here",
          tags: ["prod"],
          user_metadata: { customer: "acme", constructor: "c" },
          metrics: { toxicity: 0.2, constructor: 1 },
          spans: [
            { id: spanIds[0], type: "workflow", name: "pipeline", spans: [{ id: spanIds[1], type: "llm", name: "call", model: "gpt-4o", input: [{ role: "user", content: "q" }], output: { role: "assistant", content: "a" } }] },
          ],
        },
      ],
    },
  });
  expect(ingest.status, JSON.stringify(ingest.body)).toBe(200);
  // A record of its own for a deletion job to erase, so that GET /v2/org-jobs/{job_id} has a job.
  const doomed = await call(`/v2/projects/${projectId}/traces`, { as: tenant, body: { log_stream_id: logStreamId, traces: [{ name: "doomed", user_metadata: { fuzz: "erase-me" } }] } });
  expect(doomed.status).toBe(200);
  const job = await call("/v2/org-jobs/delete-by-metadata", { as: tenant, body: { metadata_key: "fuzz", metadata_value: "erase-me" } });
  expect(job.body.job_id, JSON.stringify(job.body)).toBeTruthy();
  // Annotation templates with a rating each, so the template and rating routes have something to
  // find (several: a fuzzed DELETE may remove some of them before the other operations run).
  const templateIds: string[] = [];
  for (let i = 0; i < 6; i++) {
    const template = await call(`/v2/projects/${projectId}/annotation/templates`, { as: tenant, body: { name: `fuzz-${i}`, constraints: { annotation_type: "like_dislike" } } });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    templateIds.push(template.body.id);
    const rating = await call(`/v2/projects/${projectId}/annotation/templates/${template.body.id}/records/${traceId}/rating`, {
      as: tenant,
      method: "PUT",
      body: { rating: { annotation_type: "like_dislike", value: true } },
    });
    expect(rating.status, JSON.stringify(rating.body)).toBe(200);
  }
  const projectTemplateIds = [...templateIds];
  // Annotation queues holding the trace, each with a like_dislike template the trace is rated
  // with (several, for the same reason), so the queue routes have something to find.
  const queueIds: string[] = [];
  const queueTemplateIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const queue = await call("/v2/annotation_queues", { as: tenant, body: { name: { value: `fuzz-queue-${i}` } } });
    expect(queue.status, JSON.stringify(queue.body)).toBe(200);
    queueIds.push(queue.body.id);
    const template = await call(`/v2/annotation_queues/${queue.body.id}/templates`, { as: tenant, body: { template: { name: "fuzz", constraints: { annotation_type: "like_dislike" } } } });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    templateIds.push(template.body.id);
    queueTemplateIds.push(template.body.id);
    const added = await call(`/v2/annotation_queues/${queue.body.id}/records`, { as: tenant, body: { project_id: projectId, run_id: logStreamId, record_selector: { type: "record_ids", record_ids: [traceId] } } });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const rating = await call(`/v2/annotation_queues/${queue.body.id}/records/${traceId}/rating?annotation_template_id=${template.body.id}`, {
      as: tenant,
      method: "PUT",
      body: { rating: { annotation_type: "like_dislike", value: true } },
    });
    expect(rating.status, JSON.stringify(rating.body)).toBe(200);
  }
  // Notification channels and alert rules (several: a fuzzed DELETE may remove some first).
  const channelIds: string[] = [];
  const alertIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const channel = await call("/v2/notification_channels", { as: tenant, body: { name: `fuzz-${i}`, type: "webhook", url: "http://127.0.0.1:9/fuzz" } });
    expect(channel.status, JSON.stringify(channel.body)).toBe(200);
    channelIds.push(channel.body.id);
  }
  for (let i = 0; i < 3; i++) {
    const rule = await call(`/v2/projects/${projectId}/alerts`, { as: tenant, body: { name: `fuzz-${i}`, log_stream_id: logStreamId, metric: "error_rate", window_minutes: 15, comparison: "gt", threshold: 0.5, channel_ids: channelIds } });
    expect(rule.status, JSON.stringify(rule.body)).toBe(200);
    alertIds.push(rule.body.id);
  }
  // Both judge integrations, so that a fuzzed DELETE of either can find one.
  expect((await call("/v2/integrations/openai", { as: tenant, method: "PUT", body: { token: "fuzz-token" } })).status).toBe(200);
  expect((await call("/v2/integrations/custom", { as: tenant, method: "PUT", body: { endpoint: "http://127.0.0.1:9/v1", api_key_value: "fuzz-key", models: ["fuzz-model"] } })).status).toBe(200);
  // Scorers with a version (several: a fuzzed DELETE may remove some first).
  const scorerIds: string[] = [];
  for (let i = 0; i < 6; i++) {
    const type = i % 2 === 0 ? "preset" : "llm";
    const scorer = await call("/v2/scorers", { as: tenant, body: { name: `fuzz_${i}_${crypto.randomUUID().slice(0, 8)}`, scorer_type: type } });
    expect(scorer.status, JSON.stringify(scorer.body)).toBe(200);
    const version = type === "preset" ? { preset: "is_json", params: {} } : { user_prompt: "Is {output} polite?", model_name: "fuzz-model" };
    expect((await call(`/v2/scorers/${scorer.body.id}/version/${type}`, { as: tenant, body: version })).status).toBe(200);
    scorerIds.push(scorer.body.id);
  }
  // A scorer no fuzzed DELETE names (it is not a path's scorer_id), for the backfills' valid bodies.
  const backfillScorer = await call("/v2/scorers", { as: tenant, body: { name: `fuzz_backfill_${crypto.randomUUID().slice(0, 8)}`, scorer_type: "preset" } });
  expect((await call(`/v2/scorers/${backfillScorer.body.id}/version/preset`, { as: tenant, body: { preset: "is_json", params: {} } })).status).toBe(200);
  const token = (await call("/login/api_key", { body: { api_key: tenant.apiKey } })).body.access_token as string;
  const logoutToken = (await call("/login/api_key", { body: { api_key: tenant.apiKey } })).body.access_token as string;
  const named = { project_id: [projectId], log_stream_id: [logStreamId], experiment_id: [experimentId], session_id: [sessionId], trace_id: [traceId], span_id: spanIds, job_id: [job.body.job_id], template_id: templateIds, record_id: [traceId], queue_id: queueIds, annotation_template_id: queueTemplateIds, user_id: [tenant.userId], run_id: [logStreamId], channel_id: channelIds, alert_id: alertIds, scorer_id: scorerIds, backfill_scorer_id: [backfillScorer.body.id as string] };
  return { tenant, member, token, logoutToken, projectId, logStreamId, experimentId, projectTemplateIds, named, ids: Object.values(named).flat() };
}

beforeAll(async () => {
  doc = (await call("/openapi.json")).body as OpenApiDocument;
  // Deletions last, the most specific first (a rating before its template, a template before its
  // queue), and the POSTs that erase records or take them out of a queue after every DELETE: a
  // fuzzed deletion that succeeds removes what the other operations need to find (the seeded
  // trace, its ratings and queue entries) to get past their handlers' lookups. A trace deleted by
  // filter before the rating routes ran left them 404 on every try (CI, 2026-11-26).
  operations = Object.entries(doc.paths)
    .flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ ...op, method: method.toUpperCase(), path })))
    .sort((a, b) => destructiveness(a) - destructiveness(b) || (a.method === "DELETE" && b.method === "DELETE" ? b.path.length - a.path.length : 0));
  for (let i = 0; i < 4; i++) datasets.push(await seed(await createTenant("admin")));
  stranger = await seed(await createTenant("admin"));
}, 60_000);

/** 0 for operations that leave the seed alone, 1 for DELETEs, 2 for POSTs that erase records or queue entries. */
function destructiveness(operation: Pick<Operation, "method" | "path">): number {
  if (operation.method === "DELETE") return 1;
  return operation.method === "POST" && /\/(delete|remove|delete-by-metadata)$/.test(operation.path) ? 2 : 0;
}

function vocabularyOf(own: Dataset, strict = false): Vocabulary {
  return {
    strict,
    validIds: () => fc.constantFrom(...own.ids),
    ids: () =>
      fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...own.ids) },
        { weight: 1, arbitrary: fc.constantFrom(...own.ids).map((id) => id.toUpperCase()) },
        { weight: 1, arbitrary: fc.constantFrom(...stranger.ids) },
        { weight: 1, arbitrary: fc.uuid() },
        { weight: 1, arbitrary: fc.constantFrom("not-a-uuid", "", "00000000-0000-0000-0000-00000000000g", own.ids[0]!.slice(0, 30)) },
      ),
    words: WORDS,
  };
}

type Credentials = Record<string, string>;

function credentialsOf(own: Dataset): fc.Arbitrary<Credentials> {
  const basic = (email: string, password: string): Credentials => ({
    Authorization: `Basic ${btoa(String.fromCharCode(...new TextEncoder().encode(`${email}:${password}`)))}`,
  });
  const weighted = (weight: number, arbitrary: fc.Arbitrary<Credentials>) => ({ weight, arbitrary });
  const broken = fc.oneof(
    fc.constantFrom<Credentials>({ "Service-API-Key": "tsk_wrong" }, { Authorization: "Bearer not.a.token" }, { Authorization: "Basic !!!" }, { Authorization: "Digest x" }),
    fc.string().map((s): Credentials => basic(s, "")),
  );
  return fc.oneof(
    weighted(12, fc.constant<Credentials>({ "Service-API-Key": own.tenant.apiKey })),
    weighted(2, fc.constant<Credentials>({ "Alt-AO-API-Key": own.tenant.apiKey })),
    weighted(2, fc.constant<Credentials>({ Authorization: `Bearer ${own.token}` })),
    weighted(1, fc.constant(basic(own.tenant.email, own.tenant.password))),
    weighted(2, fc.constant<Credentials>({ "Service-API-Key": own.member.apiKey })),
    weighted(1, fc.constant<Credentials>({})),
    weighted(2, broken),
  );
}

interface FuzzRequest {
  path: string;
  query: [string, string][];
  headers: Record<string, string>;
  body?: string;
  label: string;
}

/** Replaces or removes one value somewhere inside `value`. */
function mutate(value: unknown): fc.Arbitrary<unknown> {
  const junk = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(...NASTY_STRINGS), fc.constantFrom(null, -1, 1e308, true, [], {}));
  if (value === null || typeof value !== "object") return junk;
  const keys = Object.keys(value);
  if (keys.length === 0) return fc.oneof(junk, fc.constant(value));
  return fc.tuple(fc.constantFrom(...keys), fc.boolean(), fc.nat(3)).chain(([key, remove, how]) => {
    const inner = (value as Record<string, unknown>)[key];
    const copy: unknown = Array.isArray(value) ? [...value] : { ...(value as object) };
    if (remove && !Array.isArray(copy)) {
      delete (copy as Record<string, unknown>)[key];
      return fc.constant(copy);
    }
    const replacement = how === 0 ? junk : mutate(inner);
    return replacement.map((r) => {
      (copy as Record<string, unknown>)[key] = r;
      return copy;
    });
  });
}

/** The string with lone surrogates replaced, as a URL can carry it. */
const wellFormed = (text: string) => text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");

const deepNesting = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

const RUN_SELECTORS = ["log_stream_id", "experiment_id", "metrics_testing_id"] as const;

/**
 * The value with the fields that must name something real set to what the caller owns: its own
 * credentials in a login, exactly one run selector naming its run. Random values rarely get
 * that right, and then no request would get past validation to the handler.
 */
function repaired(value: unknown, schema: JsonSchema, own: Dataset, useExperiment: boolean): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const declared = new Set(Object.keys(resolveSchema(schema).properties ?? {}));
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  if (declared.has("username")) Object.assign(out, { username: own.tenant.email, password: own.tenant.password });
  if (declared.has("api_key")) out.api_key = own.tenant.apiKey;
  if (declared.has("log_stream_id")) {
    for (const key of RUN_SELECTORS) delete out[key];
    if (useExperiment) out.experiment_id = own.experimentId;
    else out.log_stream_id = own.logStreamId;
  }
  // A rating must fit its template (the seeded ones are like_dislike), and a reorder must name
  // every template of the project.
  if (declared.has("rating")) out.rating = { annotation_type: "like_dislike", value: true };
  if (declared.has("ordering")) out.ordering = [...own.projectTemplateIds];
  // Streaming updates may repeat the path's id in the body, which these values cannot know;
  // spans posted on their own name the trace they belong to.
  const required = new Set(resolveSchema(schema).required ?? []);
  for (const key of ["trace_id", "span_id", "parent_id"]) {
    if (required.has(key)) out[key] = own.named.trace_id![0];
    else delete out[key];
  }
  return out;
}

function resolveSchema(schema: JsonSchema): JsonSchema {
  return schema.$ref ? doc.components.schemas[schema.$ref.replace("#/components/schemas/", "")] ?? {} : schema;
}

const pick = <T>(values: readonly T[]) => fc.constantFrom(...values);

/**
 * Search bodies a user would write: leaves whose column, type, operator and value agree (the
 * schema alone cannot say so), in trees, with sorts and pages. The search property tests check
 * what such searches find; here they only have to get past validation to the handler.
 */
function searchBodyOf(own: Dataset): fc.Arbitrary<Record<string, unknown>> {
  const text = fc.record({
    type: fc.constant("text"),
    column_id: pick(["name", "input", "output", "user_metadata.customer", "user_metadata.__proto__", "user_metadata.constructor"]),
    operator: pick(["eq", "ne", "contains"]),
    value: pick(["needle", "answer", "acme", "", "漢字"]),
    case_sensitive: fc.boolean(),
  });
  const list = fc.record({ type: fc.constant("text"), column_id: pick(["name", "input"]), operator: pick(["one_of", "not_in"]), value: fc.subarray(["answer", "call", "x"]) });
  const id = fc.record({ type: fc.constant("id"), column_id: pick(["id"]), operator: pick(["eq", "ne", "one_of", "contains"]), value: pick(own.ids) }).map((leaf) =>
    leaf.operator === "one_of" ? { ...leaf, value: [leaf.value] } : leaf.operator === "contains" ? { ...leaf, value: leaf.value.slice(0, 8) } : leaf,
  );
  const number = fc.record({ type: fc.constant("number"), column_id: pick(["metrics/toxicity", "metrics/constructor", "metrics/toString"]), operator: pick(["gt", "lte", "eq"]), value: pick([0, 0.2, 1]) });
  const date = fc.record({ type: fc.constant("date"), column_id: fc.constant("created_at"), operator: pick(["gte", "lt"]), value: pick(["2000-01-01T00:00:00Z", "2100-01-01T00:00:00.000001Z"]) });
  const leaf = fc.oneof(text, list, id, number, date);
  const { node } = fc.letrec<{ node: unknown }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small" },
      leaf,
      leaf.map((l) => ({ filter: l })),
      fc.array(tie("node"), { maxLength: 2 }).map((children) => ({ and: children })),
      fc.array(tie("node"), { maxLength: 2 }).map((children) => ({ or: children })),
      tie("node").map((child) => ({ not: child })),
    ),
  }));
  return fc.record(
    {
      log_stream_id: fc.constant(own.logStreamId),
      filters: fc.array(node, { maxLength: 2 }),
      filter_tree: node,
      sort: fc.record({ column_id: pick(["created_at", "name", "id", "metrics/toxicity", "user_metadata.customer"]), ascending: fc.boolean() }),
      pagination: fc.record({ limit: fc.integer({ min: 1, max: 1000 }), starting_token: pick([0, 1, 49_999, 50_000, 2 ** 40]) }),
      select_columns: fc.record({ column_ids: fc.subarray(["name", "input", "output", "metrics/toxicity", "user_metadata.customer", "tags"]) }, { requiredKeys: [] }),
      include_counts: fc.boolean(),
      include_code_metric_metadata: fc.boolean(),
      truncate_fields: fc.boolean(),
    },
    { requiredKeys: ["log_stream_id"] },
  );
}

/** The declared media type as clients write it: with parameters (that may say anything), in any case. */
function labelOf(mediaType: string): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant(mediaType) },
    { weight: 1, arbitrary: fc.constantFrom("charset=utf-8", "x=json", "charset=UTF-8; boundary=json", "q=form").map((parameters) => `${mediaType}; ${parameters}`) },
    { weight: 1, arbitrary: fc.constant(mediaType.toUpperCase()) },
  );
}

/**
 * A metrics request (metrics/search, metrics/custom_search) the route accepts: a window of at
 * most 1,000 buckets of the interval, groups and aggregations it knows (their names are open
 * strings in the schema, so a draw from the schema alone is nearly always a 422).
 */
function metricsBodyOf(operation: Operation, own: Dataset): fc.Arbitrary<Record<string, unknown>> {
  const custom = operation.path.endsWith("custom_search");
  return fc
    .record({
      start: fc.date({ min: new Date("2020-01-01T00:00:00Z"), max: new Date("2030-01-01T00:00:00Z"), noInvalidDate: true }),
      interval: pick([1, 5, 60, 1440]),
      buckets: fc.integer({ min: 1, max: 1000 }),
      group_by: pick([null, "name", "status_code", "tags", "user_metadata.customer"]),
      metric: pick(["duration_ns", "cost", "toxicity", "status_code", "is_complete"]),
      aggregation: pick(["Count", "Sum", "Average", "Min", "Max", "P50", "P99", "PercentageTrue"]),
      record_type: pick(["trace", "span", "session"]),
    })
    .map((d) => ({
      log_stream_id: own.logStreamId,
      start_time: d.start.toISOString(),
      end_time: new Date(d.start.getTime() + d.buckets * d.interval * 60_000).toISOString(),
      group_by: d.record_type === "session" && d.group_by === "tags" ? null : d.group_by,
      ...(custom
        ? { interval_minutes: d.interval, record_type: d.record_type, metric_details: [{ id: "m", metric_name: d.record_type === "session" && (d.metric === "status_code" || d.metric === "is_complete") ? "cost" : d.metric, aggregation: d.aggregation }] }
        : { interval: d.interval }),
    }));
}

/** A body the operation should accept: strictly within its schema, naming what the caller owns. */
function validBodyOf(operation: Operation, own: Dataset): fc.Arbitrary<{ contentType?: string; body?: string }> {
  const [mediaType, content] = Object.entries(operation.requestBody?.content ?? {}).find(([type]) => type === "application/json") ?? [];
  if (!mediaType || !content) return fc.constant({});
  if (operation.path.includes("/metrics/")) return metricsBodyOf(operation, own).map((body) => ({ contentType: mediaType, body: JSON.stringify(body) }));
  if (operation.path.endsWith("search")) return searchBodyOf(own).map((body) => ({ contentType: mediaType, body: JSON.stringify(body) }));
  // An export's body (streamed or queued) is a search body with a root type; it is ordered by created_at only.
  if (/\/export_records(\/url)?$/.test(operation.path)) {
    return searchBodyOf(own).map((body) => ({ contentType: mediaType, body: JSON.stringify({ ...body, root_type: "trace", sort: { column_id: "created_at", ascending: (body.sort as { ascending?: boolean } | undefined)?.ascending ?? false } }) }));
  }
  // Queue routes whose bodies name what a schema cannot know: users of the caller's organization,
  // and records of the run.
  const json = (body: unknown) => ({ contentType: mediaType, body: JSON.stringify(body) });
  if (operation.method === "POST" && operation.path.endsWith("/annotation_queues/{queue_id}/users")) {
    return fc.constantFrom("owner", "editor", "annotator", "viewer").map((role) => json([{ user_id: own.tenant.userId, role }]));
  }
  // Alert rules name channels of the caller's organization; channels need an address the rules allow.
  if (operation.method === "POST" && operation.path.endsWith("/alerts")) {
    return fc.constantFrom("error_rate", "p95_latency_ns", "average_toxicity").map((metric) =>
      json({ name: "fuzz", log_stream_id: own.logStreamId, metric, window_minutes: 15, comparison: "gt", threshold: 1, channel_ids: (own.named.channel_id ?? []).slice(0, 1) }),
    );
  }
  if (operation.method === "PATCH" && operation.path.endsWith("/alerts/{alert_id}")) return fc.double({ min: 0, max: 10, noNaN: true }).map((threshold) => json({ threshold }));
  if (operation.method === "POST" && operation.path.endsWith("/notification_channels")) {
    return fc.constantFrom("webhook", "slack").map((type) => json({ name: "fuzz", type, url: "http://127.0.0.1:9/fuzz" }));
  }
  // A judge endpoint must be a URL the address rules allow; a scorer's new name must be free.
  if (operation.method === "PUT" && operation.path.endsWith("/integrations/custom")) {
    return fc.constant(json({ endpoint: "http://127.0.0.1:9/v1", api_key_value: "fuzz-key", models: ["fuzz-model"] }));
  }
  if (operation.method === "POST" && operation.path.endsWith("/metric_settings/backfill")) {
    return fc.constant(json({ start_time: new Date(Date.now() - 3_600_000).toISOString(), end_time: new Date().toISOString(), scorer_ids: own.named.backfill_scorer_id }));
  }
  if (operation.method === "POST" && operation.path.endsWith("/scorers/{scorer_id}/test")) return fc.constant(json({ project_id: own.projectId, record_id: (own.named.record_id ?? [])[0] }));
  if (operation.method === "POST" && operation.path.endsWith("/version/llm")) return fc.constant(json({ user_prompt: "Rate {output}", model_name: "fuzz-model" }));
  if (operation.method === "POST" && operation.path.endsWith("/version/preset")) return fc.constant(json({ preset: "length", params: { unit: "words" } }));
  if (operation.method === "PATCH" && operation.path.endsWith("/scorers/{scorer_id}")) return fc.string({ maxLength: 50 }).map((description) => json({ description }));
  if (operation.method === "POST" && operation.path.endsWith("/annotation_queues/{queue_id}/records")) {
    return fc.constant(json({ project_id: own.projectId, run_id: own.logStreamId, record_selector: { type: "record_ids", record_ids: own.named.record_id } }));
  }
  return fc
    .tuple(valueOf(content.schema, doc, vocabularyOf(own, true)), fc.boolean())
    .map(([value, useExperiment]) => ({ contentType: mediaType, body: encode(mediaType, repaired(value, content.schema, own, useExperiment)) }));
}

function bodyOf(operation: Operation, own: Dataset, vocabulary: Vocabulary): fc.Arbitrary<{ contentType?: string; body?: string }> {
  const declared = Object.entries(operation.requestBody?.content ?? {});
  if (declared.length === 0) return fc.constant({});
  const strict = vocabularyOf(own, true);
  const valid = declared.map(([mediaType, { schema }]) =>
    fc.tuple(fc.oneof(valueOf(schema, doc, strict), valueOf(schema, doc, vocabulary)), fc.boolean()).chain(([value, useExperiment]) =>
      fc.oneof(
        { weight: 4, arbitrary: fc.constant(repaired(value, schema, own, useExperiment)) },
        { weight: 2, arbitrary: fc.constant(value) },
        { weight: 3, arbitrary: mutate(repaired(value, schema, own, useExperiment)) },
      ).chain((v) => labelOf(mediaType).map((contentType) => ({ contentType, body: encode(mediaType, v) }))),
    ),
  );
  const malformed = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }).map((v) => ({ contentType: "application/json", body: JSON.stringify(v) })),
    fc.string().map((s) => ({ contentType: "application/json", body: s })),
    fc.constantFrom('{"a":', "", "   ", "{}", "[]", "null", "\u0000", deepNesting(600), deepNesting(100)).map((body) => ({ contentType: "application/json", body })),
    fc.tuple(fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "application/json; charset=utf-8", "application/x-www-form-urlencoded; x=json", "multipart/form-data", "application/json-seq", "APPLICATION/JSON"), fc.string()).map(
      ([contentType, body]) => ({ contentType, body }),
    ),
    fc.constant({ body: "{}" }),
  );
  const domain = operation.path.endsWith("search")
    ? [{ weight: 5, arbitrary: searchBodyOf(own).chain((body) => fc.oneof({ weight: 3, arbitrary: fc.constant(body) }, mutate(body))).map((body) => ({ contentType: "application/json", body: JSON.stringify(body) })) }]
    : [];
  return fc.oneof({ weight: 5, arbitrary: fc.oneof(...valid) }, { weight: 2, arbitrary: malformed }, ...domain);
}

function encode(mediaType: string, value: unknown): string {
  if (mediaType !== "application/x-www-form-urlencoded") return JSON.stringify(value) ?? "null";
  if (value === null || typeof value !== "object") return String(value);
  return new URLSearchParams(Object.entries(value).map(([k, v]): [string, string] => [k, typeof v === "string" ? v : JSON.stringify(v)])).toString();
}

/**
 * `fuzz`: anything, as described at the top. `valid`: what the operation should accept (the
 * caller's own ids and API key, a strictly valid body), to reach its handler at least once.
 */
function requestOf(operation: Operation, own: Dataset, mode: "fuzz" | "valid" = "fuzz"): fc.Arbitrary<FuzzRequest> {
  const vocabulary = vocabularyOf(own, mode === "valid");
  const params = operation.parameters ?? [];
  const pathValues = fc.tuple(
    ...params
      .filter((p) => p.in === "path")
      .map((p) =>
        fc
          .oneof(
            // The path names the caller's own record of that kind most of the time: else nothing
            // gets past the 404.
            { weight: own.named[p.name] ? 12 : 0, arbitrary: fc.constantFrom(...(own.named[p.name] ?? [""])) },
            { weight: mode === "valid" && own.named[p.name] ? 0 : 8, arbitrary: valueOf(p.schema, doc, vocabulary) },
            { weight: mode === "valid" ? 0 : 1, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
          )
          .map((v) => [p.name, String(v)] as const),
      ),
  );
  const queryValue =
    mode === "valid"
      ? fc.constantFrom("true", "false")
      : fc.oneof(fc.constantFrom("true", "false", "1", "0", "yes", "no", "", "maybe", "TRUE"), fc.constantFrom(...WORDS), fc.string({ maxLength: 8 }));
  // A declared query parameter gets values of its own schema (an enum's members, an integer in
  // range, a boolean), and, in the other modes, what clients get wrong besides.
  const declaredQueryValue = (schema: JsonSchema, name: string) => {
    // A query parameter naming an id the caller owns (a queue rating's annotation_template_id)
    // takes one in valid mode, as a path parameter does.
    const owned = own.named[name];
    if (mode === "valid" && owned) return fc.constantFrom(...owned);
    return mode === "valid" ? valueOf(schema, doc, vocabulary).map((v) => String(v)) : fc.oneof(valueOf(schema, doc, vocabulary).map((v) => String(v)), queryValue);
  };
  const query = fc.tuple(
    ...params.filter((p) => p.in === "query").map((p) => fc.option(declaredQueryValue(p.schema, p.name).map((v) => [p.name, v] as [string, string]), { nil: undefined })),
    fc.option(fc.tuple(fc.constantFrom("project_id", "unknown", "__proto__", "limit"), queryValue), { nil: undefined }),
  );
  const extraHeaders = fc.record(
    {
      "x-request-id": fc.oneof(fc.constantFrom("fuzz-1", "bad id", "x".repeat(200)), fc.string({ maxLength: 10 })),
      "CF-Connecting-IP": fc.constantFrom("203.0.113.77", "2001:db8::1", "garbage", ""),
      "X-Galileo-SDK": fc.constantFrom("galileo-generated/0.2.14", "galileo/1.33.1"),
    },
    { requiredKeys: [] },
  );
  // Logout takes a bearer token only (an API key is a 400): its valid request ends a token kept for it.
  const validCredentials: Credentials = operation.path === "/v2/logout" ? { Authorization: `Bearer ${own.logoutToken}` } : { "Service-API-Key": own.tenant.apiKey };
  const credentials = mode === "valid" ? fc.constant(validCredentials) : credentialsOf(own);
  const body = mode === "valid" ? validBodyOf(operation, own) : bodyOf(operation, own, vocabulary);
  return fc.tuple(pathValues, query, credentials, mode === "valid" ? fc.constant({}) : extraHeaders, body).map(([pathPairs, queryPairs, credentials, extra, { contentType, body }]) => {
    let path = operation.path;
    for (const [name, value] of pathPairs) path = path.replace(`{${name}}`, encodeURIComponent(wellFormed(value)));
    const headers: Record<string, string> = { ...extra, ...credentials };
    if (contentType) headers["content-type"] = contentType;
    const queryList = queryPairs.filter((q): q is [string, string] => q !== undefined);
    return { path, query: queryList, headers, body, label: `${operation.method} ${operation.path}` };
  });
}

/** A validator for the schema declared for one answer, its `$ref`s resolved in the document. */
const validators = new Map<string, Validator>();
function validatorFor(key: string, schema: JsonSchema): Validator {
  let validator = validators.get(key);
  if (!validator) {
    validator = new Validator({ ...schema, components: doc.components } as never, "2020-12", false);
    validators.set(key, validator);
  }
  return validator;
}

async function send(operation: Operation, request: FuzzRequest) {
  const url = `${BASE}${request.path}${request.query.length ? `?${new URLSearchParams(request.query)}` : ""}`;
  const response = await SELF.fetch(url, { method: operation.method, headers: request.headers, body: operation.method === "GET" ? undefined : request.body });
  return { response, text: await response.text() };
}

function checkAnswer(operation: Operation, request: FuzzRequest, response: Response, text: string): void {
  const what = `${request.label} -> ${response.status}\nrequest: ${JSON.stringify(request).slice(0, 1500)}\nanswer: ${text.slice(0, 800)}`;
  expect(response.status, what).toBeLessThan(500);
  const declared = operation.responses[String(response.status)];
  expect(declared, `undeclared status: ${what}`).toBeDefined();
  expect(response.headers.get("x-request-id"), what).toBeTruthy();
  if (response.status === 401) expect(response.headers.get("www-authenticate"), what).toBeTruthy();
  if (response.status === 429 || response.status === 503) expect(Number(response.headers.get("retry-after")), what).toBeGreaterThanOrEqual(1);
  const schema = declared!.content?.["application/json"]?.schema;
  if (!schema) return;
  expect(response.headers.get("content-type"), what).toMatch(/^application\/json/);
  const result = validatorFor(`${request.label} ${response.status}`, schema).validate(JSON.parse(text));
  expect(result.valid, `${what}\nschema errors: ${JSON.stringify(result.errors.slice(0, 5))}`).toBe(true);
}

/**
 * Operations whose URL only the service can make (a signed download URL: the signature is the
 * credential), so no generated request can be answered 2xx; they are fuzzed like the others for
 * what they answer, and test/export-url.test.ts downloads through them.
 */
const SERVICE_MADE_URLS = ["GET /v2/exports/{job_id}/file"];

/** GETs first: a write of the fuzz may (legitimately) change what a lookup of the seed finds. */
const READS_FIRST = (a: Operation, b: Operation) => Number(a.method !== "GET") - Number(b.method !== "GET");

describe("every operation of /openapi.json answers what it declares, whatever it is sent", () => {
  it("the document has the operations this suite is about", () => {
    expect(operations.length).toBeGreaterThanOrEqual(35);
    for (const operation of operations) expect(Object.keys(operation.responses).length, `${operation.method} ${operation.path}`).toBeGreaterThan(0);
  });

  const runs = Number(env.FUZZ_RUNS) || RUNS_PER_OPERATION;
  it("each operation", { timeout: 300_000 }, async () => {
    const summary: string[] = [];
    for (const [index, operation] of [...operations].sort(READS_FIRST).entries()) {
      const own = datasets[index % datasets.length]!;
      const statuses = new Map<number, number>();
      const exercise = async (request: FuzzRequest) => {
        const { response, text } = await send(operation, request);
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        checkAnswer(operation, request, response, text);
      };
      await fc.assert(fc.asyncProperty(requestOf(operation, own), exercise), { numRuns: runs });
      // Each operation also gets past validation to its handler at least once: requests it
      // should accept until one is answered 2xx (each answer checked like the others).
      for (let tries = 0; tries < 50 && ![...statuses.keys()].some((status) => status < 300); tries++) {
        await exercise(fc.sample(requestOf(operation, own, "valid"), 1)[0]!);
      }
      summary.push(`${operation.method} ${operation.path}: ${[...statuses].map(([status, n]) => `${status}x${n}`).join(" ")}`);
    }
    const neverOk = summary.filter((line) => !/: .*\b2\d\dx/.test(line) && !SERVICE_MADE_URLS.some((op) => line.startsWith(`${op}: `)));
    expect(neverOk, `operations never answered 2xx:\n${summary.join("\n")}`).toEqual([]);
  });
});
