/**
 * The available-columns answers (contract, section 5) compared field by field with the seed's
 * table (seed/service-interface.md, sections 2.4 to 2.6). The expected table is typed out here
 * from the seed on purpose: importing src/columns would compare the catalogue with itself.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";
import { allRecordDbs } from "./support/record-dbs";

type Kind = "control" | "trace" | "tool" | "retriever" | "session" | "workflow" | "llm" | "agent";

interface Expected {
  id: string;
  data_type: string;
  filter_type: string;
  is_optional: boolean;
  sortable: boolean;
  multi_valued: boolean;
  applicable_types: Kind[];
  allowed_values?: string[];
}

const ALL: Kind[] = ["control", "trace", "tool", "retriever", "session", "workflow", "llm", "agent"];
const NOT_SESSION: Kind[] = ["control", "trace", "tool", "retriever", "workflow", "llm", "agent"];
const SPANS: Kind[] = ["control", "tool", "retriever", "workflow", "llm", "agent"];

function col(
  id: string,
  data_type: string,
  filter_type: string,
  is_optional: boolean,
  applicable_types: Kind[],
  extra: Partial<Expected> = {},
): Expected {
  return { id, data_type, filter_type, is_optional, sortable: true, multi_valued: false, applicable_types, ...extra };
}

/** Seed section 2.5, in its order. */
const SEED_STANDARD_COLUMNS: Expected[] = [
  col("input", "text", "text", false, ALL),
  col("output", "text", "text", false, ALL),
  col("name", "text", "text", false, ALL),
  col("created_at", "timestamp", "date", false, ALL),
  col("external_id", "text", "text", true, ALL),
  col("id", "uuid", "id", false, ALL),
  col("progress_message", "text", "text", false, ALL),
  col("error_message", "text", "text", false, ALL),
  col("tags", "string_list", "collection", false, NOT_SESSION, { multi_valued: true, sortable: false }),
  col("status_code", "integer", "number", true, NOT_SESSION),
  col("dataset_input", "text", "text", false, NOT_SESSION),
  col("dataset_output", "text", "text", false, NOT_SESSION),
  col("session_id", "uuid", "id", false, NOT_SESSION),
  col("project_id", "uuid", "id", false, NOT_SESSION),
  col("run_id", "uuid", "id", false, NOT_SESSION),
  col("updated_at", "timestamp", "date", true, NOT_SESSION),
  col("has_children", "boolean", "boolean", true, NOT_SESSION),
  col("is_complete", "boolean", "boolean", false, NOT_SESSION),
  col("type", "text", "text", false, SPANS, {
    allowed_values: ["control", "trace", "agent", "tool", "session", "workflow", "llm", "retriever"],
  }),
  col("trace_id", "uuid", "id", false, SPANS),
  col("parent_id", "uuid", "id", false, SPANS),
  col("step_number", "integer", "number", true, SPANS),
  col("agent_type", "text", "text", false, ["agent"], {
    allowed_values: ["judge", "router", "supervisor", "planner", "react", "reflection", "classifier", "default"],
  }),
  col("tools", "text", "text", false, ["llm"]),
  col("model", "text", "text", true, ["llm"]),
  col("temperature", "floating_point", "number", true, ["llm"]),
  col("finish_reason", "text", "text", true, ["llm"]),
  col("tool_call_id", "text", "text", true, ["tool"]),
  col("control_id", "integer", "number", true, ["control"]),
  col("agent_name", "text", "text", true, ["control"]),
  col("check_stage", "text", "text", true, ["control"], { allowed_values: ["pre", "post"] }),
  col("applies_to", "text", "text", true, ["control"], { allowed_values: ["tool_call", "llm_call"] }),
  col("evaluator_name", "text", "text", true, ["control"]),
  col("selector_path", "text", "text", true, ["control"]),
];

const FAMILY_KINDS: Record<"spans" | "traces" | "sessions", Kind[]> = {
  spans: SPANS,
  traces: ["trace"],
  sessions: ["session"],
};

/** The seed's columns a route lists: those that apply to at least one kind it returns, in order. */
function expectedFor(route: keyof typeof FAMILY_KINDS): Expected[] {
  return SEED_STANDARD_COLUMNS.filter((c) => c.applicable_types.some((k) => FAMILY_KINDS[route].includes(k)));
}

const STANDARD_KEYS = [
  "id", "label", "description", "category", "group_label", "data_type", "filter_type", "filterable",
  "sortable", "multi_valued", "is_optional", "is_empty", "applicable_types",
];

let tenant: Tenant;
let projectId: string;

beforeAll(async () => {
  tenant = await createTenant();
  projectId = (await call("/v2/projects", { as: tenant, body: { name: "columns" } })).body.id;
});

async function newLogStream(name: string): Promise<string> {
  const response = await call(`/v2/projects/${projectId}/log_streams`, { as: tenant, body: { name } });
  expect(response.status).toBe(200);
  return response.body.id;
}

async function columnsOf(route: keyof typeof FAMILY_KINDS, selector: Record<string, string>) {
  const response = await call(`/v2/projects/${projectId}/${route}/available_columns`, { as: tenant, body: selector });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  expect(Object.keys(response.body)).toEqual(["columns"]);
  return response.body.columns as Record<string, unknown>[];
}

describe("standard columns match the seed's table", () => {
  for (const route of ["spans", "traces", "sessions"] as const) {
    it(`${route}: ids, order, types, flags, applicable types and allowed values`, async () => {
      const columns = await columnsOf(route, { log_stream_id: await newLogStream(`fresh-${route}`) });
      const expected = expectedFor(route);
      // A fresh run has no metrics: the answer is exactly the standard columns.
      expect(columns.map((c) => c.id)).toEqual(expected.map((c) => c.id));
      columns.forEach((column, i) => {
        const seed = expected[i]!;
        const keys = [...STANDARD_KEYS, ...(seed.allowed_values ? ["allowed_values"] : [])];
        expect(Object.keys(column).sort(), `keys of ${seed.id}`).toEqual(keys.sort());
        expect(column, `column ${seed.id}`).toEqual({
          ...seed,
          label: expect.any(String),
          description: expect.any(String),
          category: "standard",
          group_label: "Standard",
          filterable: true,
          is_empty: true,
        });
        expect((column.label as string).length, `label of ${seed.id}`).toBeGreaterThan(0);
        expect((column.description as string).length, `description of ${seed.id}`).toBeGreaterThan(0);
      });
    });
  }

  it("the three routes list 34, 18 and 8 columns", async () => {
    const logStreamId = await newLogStream("counts");
    expect((await columnsOf("spans", { log_stream_id: logStreamId })).length).toBe(34);
    expect((await columnsOf("traces", { log_stream_id: logStreamId })).length).toBe(18);
    expect((await columnsOf("sessions", { log_stream_id: logStreamId })).length).toBe(8);
  });

  it("experiments are answered the same way", async () => {
    const experiment = await call(`/v2/projects/${projectId}/experiments`, { as: tenant, body: { name: "exp", task_type: 16 } });
    const columns = await columnsOf("traces", { experiment_id: experiment.body.id });
    expect(columns.map((c) => c.id)).toEqual(expectedFor("traces").map((c) => c.id));
  });

  it("a run selector of the wrong kind is a 404 (a log stream id named as an experiment)", async () => {
    const logStreamId = await newLogStream("wrong-kind");
    const response = await call(`/v2/projects/${projectId}/spans/available_columns`, { as: tenant, body: { experiment_id: logStreamId } });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ detail: expect.any(String) });
  });
});

describe("metric columns and is_empty", () => {
  let logStreamId: string;
  let sessionId: string;

  beforeAll(async () => {
    logStreamId = await newLogStream("filled");
    const session = await call(`/v2/projects/${projectId}/sessions`, {
      as: tenant,
      body: { log_stream_id: logStreamId, name: "conversation", external_id: "ext-1" },
    });
    expect(session.status, JSON.stringify(session.body)).toBe(200);
    sessionId = session.body.id;
    const ingest = await call(`/v2/projects/${projectId}/traces`, {
      as: tenant,
      body: {
        log_stream_id: logStreamId,
        session_id: sessionId,
        traces: [
          {
            name: "answer",
            input: "question",
            output: "answer",
            tags: ["prod"],
            metrics: { toxicity: 0.12, custom_score: 3 },
            spans: [
              {
                type: "llm",
                name: "call",
                input: [{ role: "user", content: "q" }],
                output: { role: "assistant", content: "a" },
                model: "gpt-4o",
                temperature: 0.2,
                metrics: { toxicity: 0.4, num_input_tokens: 12 },
              },
              { type: "tool", name: "search", input: "q", tool_call_id: "call-1", status_code: 200 },
            ],
          },
        ],
      },
    });
    expect(ingest.status, JSON.stringify(ingest.body)).toBe(200);
  });

  it("the run's metrics follow the standard columns, by name, with their descriptors", async () => {
    const columns = await columnsOf("spans", { log_stream_id: logStreamId });
    const standardCount = expectedFor("spans").length;
    expect(columns.slice(0, standardCount).map((c) => c.id)).toEqual(expectedFor("spans").map((c) => c.id));
    const metrics = columns.slice(standardCount);
    expect(metrics.map((c) => c.id)).toEqual(["metrics/num_input_tokens", "metrics/toxicity"]);
    // Seed section 2.6.
    expect(metrics[1]).toEqual({
      id: "metrics/toxicity",
      label: expect.any(String),
      description: expect.any(String),
      category: "metric",
      group_label: "Safety Metrics",
      data_type: "floating_point",
      data_unit: "percentage",
      filter_type: "number",
      filterable: true,
      sortable: true,
      multi_valued: false,
      is_optional: expect.any(Boolean),
      is_empty: false,
      applicable_types: [],
      roll_up_method: "average",
      threshold: { buckets: [expect.any(Number), expect.any(Number)], display_value_levels: ["Low", "Medium", "High"], inverted: true },
    });
    const buckets = (metrics[1]!.threshold as { buckets: number[] }).buckets;
    expect(buckets[0]!).toBeLessThan(buckets[1]!);
    expect(metrics[0]).toMatchObject({ category: "metric", filter_type: "number", filterable: true, sortable: true, applicable_types: [], is_empty: false });
  });

  it("a metric named like an Object property is an ordinary metric column", async () => {
    const run = await newLogStream("prototype-names");
    const names = ["constructor", "toString", "hasOwnProperty", "valueOf", "__defineGetter__", "isPrototypeOf"];
    const ingest = await call(`/v2/projects/${projectId}/traces`, {
      as: tenant,
      body: { log_stream_id: run, traces: [{ name: "t", input: "i", metrics: Object.fromEntries(names.map((n, i) => [n, i + 0.5])) }] },
    });
    expect(ingest.status, JSON.stringify(ingest.body)).toBe(200);
    const metrics = (await columnsOf("traces", { log_stream_id: run })).filter((c) => c.category === "metric");
    expect(metrics.map((c) => c.id).sort()).toEqual(names.map((n) => `metrics/${n}`).sort());
    for (const column of metrics) {
      const name = (column.id as string).slice("metrics/".length);
      expect(column).toMatchObject({ label: name, description: `Metric ${name}.`, data_type: "floating_point", group_label: "Metrics", roll_up_method: "average" });
    }
  });

  it("metrics are listed per family: a trace metric is not a span column", async () => {
    const traceColumns = await columnsOf("traces", { log_stream_id: logStreamId });
    // The llm span's input tokens roll up into its trace and the trace's session (docs/analytics.md).
    expect(traceColumns.filter((c) => c.category === "metric").map((c) => c.id)).toEqual(["metrics/custom_score", "metrics/num_input_tokens", "metrics/toxicity"]);
    const sessionColumns = await columnsOf("sessions", { log_stream_id: logStreamId });
    expect(sessionColumns.filter((c) => c.category === "metric").map((c) => c.id)).toEqual(["metrics/num_input_tokens"]);
  });

  it("is_empty is false exactly for the span columns that hold a value", async () => {
    const columns = await columnsOf("spans", { log_stream_id: logStreamId });
    const filled = columns.filter((c) => c.category === "standard" && c.is_empty === false).map((c) => c.id);
    expect(filled.sort()).toEqual(
      [
        "input", "output", "name", "created_at", "id", "status_code", "session_id", "project_id", "run_id",
        "is_complete", "type", "trace_id", "parent_id", "model", "temperature", "tool_call_id",
      ].sort(),
    );
  });

  it("is_empty is false exactly for the trace and session columns that hold a value", async () => {
    const traces = await columnsOf("traces", { log_stream_id: logStreamId });
    expect(traces.filter((c) => c.category === "standard" && !c.is_empty).map((c) => c.id).sort()).toEqual(
      ["input", "output", "name", "created_at", "id", "tags", "session_id", "project_id", "run_id", "has_children", "is_complete"].sort(),
    );
    const sessions = await columnsOf("sessions", { log_stream_id: logStreamId });
    expect(sessions.filter((c) => !c.is_empty).map((c) => c.id).sort()).toEqual(["name", "created_at", "external_id", "id", "metrics/num_input_tokens"].sort());
  });

  it("is_empty is computed per run: another run of the project stays empty", async () => {
    const other = await newLogStream("still-empty");
    const columns = await columnsOf("spans", { log_stream_id: other });
    expect(columns.every((c) => c.is_empty === true)).toBe(true);
    expect(columns.some((c) => c.category === "metric")).toBe(false);
  });

  it("the presence rows agree with the records themselves", async () => {
    // is_empty is kept in run_columns at ingestion: check it against the stored records.
    const { results } = await allRecordDbs.prepare(
      "SELECT count(*) AS n FROM records WHERE run_id = ? AND record_type = 'span' AND model IS NOT NULL",
    )
      .bind(logStreamId)
      .all<{ n: number }>();
    expect(results[0]!.n).toBe(1);
    const presence = await allRecordDbs.prepare("SELECT column_id FROM run_columns WHERE run_id = ? AND record_type = 'span' AND column_id = 'model'")
      .bind(logStreamId)
      .all();
    expect(presence.results).toHaveLength(1);
  });
});
