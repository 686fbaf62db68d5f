/**
 * Tenancy (contract, section 2): every query is scoped to the caller's organization. Another
 * organization's project is a 404 on every route that takes a project id, indistinguishable from
 * a project that does not exist, and its data never appears in the caller's lists.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { type CallResult, call } from "./support/client";
import { type Tenant, createTenant } from "./support/tenants";
import { allRecordDbs } from "./support/record-dbs";

let owner: Tenant;
let stranger: Tenant;
let project: { id: string; logStream: string; experiment: string; trace: string; span: string; session: string };
let strangerProject: { id: string; logStream: string };

beforeAll(async () => {
  owner = await createTenant("admin");
  stranger = await createTenant("admin");
  const id = (await call("/v2/projects", { as: owner, body: { name: "private" } })).body.id;
  const logStream = (await call(`/v2/projects/${id}/log_streams`, { as: owner, body: { name: "secret-stream" } })).body.id;
  const experiment = (await call(`/v2/projects/${id}/experiments`, { as: owner, body: { name: "secret-experiment" } })).body.id;
  const [trace, span, session] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
  expect((await call(`/v2/projects/${id}/sessions`, { as: owner, body: { log_stream_id: logStream, id: session } })).status).toBe(200);
  const ingested = await call(`/v2/projects/${id}/traces`, {
    as: owner,
    body: {
      log_stream_id: logStream,
      session_id: session,
      traces: [{ id: trace, name: "secret", user_metadata: { k: "v" }, metrics: { toxicity: 0.3 }, spans: [{ id: span, type: "llm", model: "m" }] }],
    },
  });
  expect(ingested.status).toBe(200);
  project = { id, logStream, experiment, trace, span, session };

  const strangerId = (await call("/v2/projects", { as: stranger, body: { name: "own" } })).body.id;
  strangerProject = {
    id: strangerId,
    logStream: (await call(`/v2/projects/${strangerId}/log_streams`, { as: stranger, body: { name: "own-stream" } })).body.id,
  };
});

function expectNotFound(response: CallResult, what: string): void {
  expect(response.status, `${what}: ${JSON.stringify(response.body)}`).toBe(404);
  expect(response.body, what).toEqual({ detail: expect.any(String) });
  // Nothing of the foreign project leaks into the error.
  const text = JSON.stringify(response.body);
  for (const secret of ["private", "secret-stream", project.logStream, project.trace]) expect(text, what).not.toContain(secret);
}

/** The foundation's routes that take a project id, each with a body it would otherwise accept. */
function foundationRoutes(projectId: string) {
  const run = { log_stream_id: project.logStream };
  return [
    ["GET", `/v2/projects/${projectId}`, undefined],
    ["GET", `/v2/projects/${projectId}/log_streams`, undefined],
    ["POST", `/v2/projects/${projectId}/log_streams`, { name: "intruder-stream" }],
    ["GET", `/v2/projects/${projectId}/experiments`, undefined],
    ["POST", `/v2/projects/${projectId}/experiments`, { name: "intruder-experiment" }],
    ["POST", `/v2/projects/${projectId}/traces`, { ...run, traces: [{ name: "intruder" }] }],
    ["POST", `/v2/projects/${projectId}/sessions`, { ...run, name: "intruder-session" }],
    ["POST", `/v2/projects/${projectId}/spans/available_columns`, run],
    ["POST", `/v2/projects/${projectId}/traces/available_columns`, run],
    ["POST", `/v2/projects/${projectId}/sessions/available_columns`, { experiment_id: project.experiment }],
  ] as const;
}

describe("another organization's project is a 404", () => {
  it("on every foundation route, with every auth scheme", async () => {
    const token = (await call("/login/api_key", { body: { api_key: stranger.apiKey } })).body.access_token;
    const schemes: Record<string, string>[] = [
      { "Service-API-Key": stranger.apiKey },
      { "Alt-AO-API-Key": stranger.apiKey },
      { Authorization: `Bearer ${token}` },
      { Authorization: `Basic ${btoa(`${stranger.email}:${stranger.password}`)}` },
    ];
    for (const headers of schemes) {
      for (const [method, path, body] of foundationRoutes(project.id)) {
        expectNotFound(await call(path, { method, body, headers }), `${method} ${path} with ${Object.keys(headers)[0]}`);
      }
    }
  });

  it("exactly as for a project that does not exist", async () => {
    const missing = crypto.randomUUID();
    for (const [method, path, body] of foundationRoutes(missing)) {
      const absent = await call(path, { method, body, as: stranger });
      const foreign = await call(path.replace(missing, project.id), { method, body, as: stranger });
      expect([foreign.status, foreign.body], `${method} ${path}`).toEqual([absent.status, absent.body]);
    }
  });

  it("on every route of the OpenAPI document that takes a project id (none answers 2xx)", async () => {
    // Routes added later (search, streaming, ...) are covered too: whatever their body, a
    // stranger must never get a success on the owner's project.
    const document = (await call("/openapi.json")).body as { paths: Record<string, Record<string, unknown>> };
    const routes = Object.entries(document.paths).filter(([path]) => path.includes("{project_id}"));
    expect(routes.length).toBeGreaterThanOrEqual(foundationRoutes(project.id).length - 3);
    const fill = (path: string) =>
      path
        .replace("{project_id}", project.id)
        .replace(/\{(trace_id|id)\}/g, project.trace)
        .replace(/\{span_id\}/g, project.span)
        .replace(/\{session_id\}/g, project.session)
        .replace(/\{[^}]+\}/g, project.trace);
    const body = {
      log_stream_id: project.logStream,
      traces: [{ name: "intruder" }],
      spans: [{ type: "llm", name: "intruder" }],
      trace_id: project.trace,
      parent_id: project.trace,
      name: "intruder",
    };
    for (const [path, operations] of routes) {
      for (const method of Object.keys(operations).filter((m) => ["get", "post", "put", "patch", "delete"].includes(m))) {
        const response = await call(`${fill(path)}?log_stream_id=${project.logStream}`, {
          method: method.toUpperCase(),
          as: stranger,
          body: method === "get" || method === "delete" ? undefined : body,
        });
        expect([404, 422], `${method.toUpperCase()} ${path}: ${response.status} ${JSON.stringify(response.body)}`).toContain(response.status);
      }
    }
  });

  it("a stranger's own project cannot reach the owner's runs", async () => {
    for (const [path, body] of [
      [`/v2/projects/${strangerProject.id}/traces`, { log_stream_id: project.logStream, traces: [{ name: "x" }] }],
      [`/v2/projects/${strangerProject.id}/sessions`, { log_stream_id: project.logStream }],
      [`/v2/projects/${strangerProject.id}/spans/available_columns`, { log_stream_id: project.logStream }],
      [`/v2/projects/${strangerProject.id}/traces/available_columns`, { experiment_id: project.experiment }],
    ] as const) {
      expectNotFound(await call(path, { as: stranger, body }), path);
    }
  });

  it("nothing the stranger tried was written to the owner's project", async () => {
    const runs = await env.DB.prepare("SELECT name FROM runs WHERE project_id = ? ORDER BY name").bind(project.id).all();
    expect(runs.results).toEqual([{ name: "secret-experiment" }, { name: "secret-stream" }]);
    const records = await allRecordDbs.prepare("SELECT organization_id, count(*) AS n FROM records WHERE project_id = ? GROUP BY organization_id")
      .bind(project.id)
      .all();
    expect(records.results).toEqual([{ organization_id: owner.organizationId, n: 3 }]);
  });
});

describe("lists never show another organization's data", () => {
  it("projects", async () => {
    const mine = await call("/v2/projects", { as: stranger });
    expect(mine.status).toBe(200);
    expect(mine.body.map((p: { id: string }) => p.id)).toEqual([strangerProject.id]);
    const byName = await call("/v2/projects?project_name=private", { as: stranger });
    expect(byName.body).toEqual([]);
    const theirs = await call("/v2/projects", { as: owner });
    expect(theirs.body.map((p: { id: string }) => p.id)).toEqual([project.id]);
  });

  it("log streams and experiments", async () => {
    const streams = await call(`/v2/projects/${strangerProject.id}/log_streams`, { as: stranger });
    expect(streams.body.map((r: { id: string }) => r.id)).toEqual([strangerProject.logStream]);
    const experiments = await call(`/v2/projects/${strangerProject.id}/experiments`, { as: stranger });
    expect(experiments.body).toEqual([]);
  });

  it("available columns of the stranger's run know nothing of the owner's metrics", async () => {
    const columns = await call(`/v2/projects/${strangerProject.id}/traces/available_columns`, {
      as: stranger,
      body: { log_stream_id: strangerProject.logStream },
    });
    expect(columns.status).toBe(200);
    expect(columns.body.columns.filter((c: { category: string }) => c.category === "metric")).toEqual([]);
    expect(columns.body.columns.every((c: { is_empty: boolean }) => c.is_empty)).toBe(true);
  });

  it("a project created by name in one organization does not return another's", async () => {
    const created = await call("/v2/projects", { as: stranger, body: { name: "private" } });
    expect(created.status).toBe(200);
    expect(created.body.id).not.toBe(project.id);
    const owned = await call(`/v2/projects/${project.id}`, { as: owner });
    expect(owned.body.name).toBe("private");
  });
});

describe("members see their organization's projects", () => {
  it("a member of the owner's organization reaches the project; a stranger's member does not", async () => {
    const { addUser } = await import("./support/tenants");
    const colleague = await addUser(owner, "member");
    expect((await call(`/v2/projects/${project.id}`, { as: colleague })).status).toBe(200);
    const outsider = await addUser(stranger, "member");
    expectNotFound(await call(`/v2/projects/${project.id}`, { as: outsider }), "outsider member");
  });
});
