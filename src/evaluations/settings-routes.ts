/**
 * `GET|PATCH /v2/projects/{pid}/log_streams/{id}/metric_settings` and the same under
 * `experiments/{id}` (contract section 15): members read, admins write. A PATCH replaces the
 * run's scorers and segment filters whole; scorers are named by id or name (an unknown one is a
 * 422). Settings apply to records written after the PATCH answered (every isolate within 5 s:
 * run-settings.ts).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { adminOnly } from "../auth/authenticate";
import { database, nowMicros } from "../db/client";
import type { RunKind } from "../db/schema";
import { adminOnlyResponse, commonErrorResponses, tooLargeResponse, Uuid } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { RequestValidationError } from "../http/errors";
import type { Principal } from "../http/app-env";
import type { Env } from "../env";
import { ownedRunOrThrow, runOwnershipQuery } from "../projects/run-access";
import { startBackfill } from "./backfill-job";
import { forgetRunSettings, type RunSettings, runSettings, SettingsBody } from "./run-settings";

const json = <T extends z.ZodTypeAny>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });
const Answer = z.record(z.string(), z.unknown()).openapi("MetricSettingsAnswer");

const Backfill = z
  .strictObject({
    start_time: z.string().datetime({ offset: true }),
    end_time: z.string().datetime({ offset: true }),
    scorer_ids: z.array(Uuid).min(1).max(50).nullable().optional().openapi({ description: "The scorers to run; by default the run's." }),
  })
  .openapi("ScoreBackfill");

const RUN_PATHS: { segment: string; kind: RunKind; param: string }[] = [
  { segment: "log_streams", kind: "log_stream", param: "log_stream_id" },
  { segment: "experiments", kind: "experiment", param: "experiment_id" },
];

async function ownedRun(env: Env, principal: Principal, projectId: string, runId: string, kind: RunKind) {
  return ownedRunOrThrow(await runOwnershipQuery(database(env.DB), principal, projectId, { runId, kind }));
}

/** The answer: each scorer with its id and name (a deleted scorer drops out). */
async function settingsAnswer(env: Env, organizationId: string, settings: RunSettings | null) {
  const scorers = settings?.scorers ?? [];
  const names = new Map<string, string>();
  if (scorers.length > 0) {
    const rows = await env.DB.prepare("SELECT id, name FROM scorers WHERE organization_id = ?1 AND id IN (SELECT value FROM json_each(?2))").bind(organizationId, JSON.stringify(scorers.map((s) => s.id))).all<{ id: string; name: string }>();
    for (const r of rows.results) names.set(r.id, r.name);
  }
  return {
    scorers: scorers.filter((s) => names.has(s.id)).map((s) => ({ id: s.id, name: names.get(s.id)!, filters: s.filters, scoreable_node_types: s.scoreable_node_types })),
    segment_filters: settings?.segment_filters ?? [],
  };
}

export function registerMetricSettings(app: Router): void {
  for (const { segment, kind, param } of RUN_PATHS) {
    const Params = z.object({
      project_id: Uuid.openapi({ param: { name: "project_id", in: "path" } }),
      [param]: Uuid.openapi({ param: { name: param, in: "path" } }),
    });
    const path = `/projects/{project_id}/${segment}/{${param}}/metric_settings`;
    app.openapi(
      createRoute({ method: "get", path, tags: ["Evaluations"], summary: `The scorers that run on a ${kind.replace("_", " ")}`, request: { params: Params }, responses: { 200: json(Answer, "The settings"), ...commonErrorResponses } }),
      async (c) => {
        const principal = c.get("principal");
        const params = c.req.valid("param") as Record<string, string>;
        const run = await ownedRun(c.env, principal, params.project_id!, params[param]!, kind);
        return c.json(await settingsAnswer(c.env, principal.organizationId, await runSettings(c.env, run.id, true)), 200);
      },
    );
    app.openapi(
      createRoute({
        method: "patch",
        path,
        tags: ["Evaluations"],
        summary: `Choose the scorers that run on a ${kind.replace("_", " ")}`,
        description: "Replaces the run's scorers and segment filters. Records written after the answer are scored after they are stored, through a queue.",
        middleware: [adminOnly] as const,
        request: { params: Params, body: { content: { "application/json": { schema: SettingsBody } }, required: true } },
        responses: { 200: json(Answer, "The settings"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses },
      }),
      async (c) => {
        const principal = c.get("principal");
        const params = c.req.valid("param") as Record<string, string>;
        const body = c.req.valid("json");
        const run = await ownedRun(c.env, principal, params.project_id!, params[param]!, kind);
        const wanted = body.scorers.map((s) => s.id ?? s.name!);
        const rows = await c.env.DB.prepare("SELECT id, name FROM scorers WHERE organization_id = ?1 AND (id IN (SELECT value FROM json_each(?2)) OR name IN (SELECT value FROM json_each(?2)))")
          .bind(principal.organizationId, JSON.stringify(wanted))
          .all<{ id: string; name: string }>();
        const faults = body.scorers.flatMap((s, i) => {
          const found = rows.results.find((r) => (s.id !== undefined ? r.id === s.id.toLowerCase() : r.name === s.name));
          return found ? [] : [{ loc: ["body", "scorers", i, s.id !== undefined ? "id" : "name"], msg: `Value error, no scorer ${JSON.stringify(s.id ?? s.name)} in this organization`, type: "value_error" }];
        });
        if (faults.length > 0) throw new RequestValidationError(faults);
        const seen = new Set<string>();
        const settings: RunSettings = {
          scorers: body.scorers.flatMap((s) => {
            const id = rows.results.find((r) => (s.id !== undefined ? r.id === s.id.toLowerCase() : r.name === s.name))!.id;
            if (seen.has(id)) return [];
            seen.add(id);
            return [{ id, filters: s.filters ?? [], scoreable_node_types: s.scoreable_node_types ?? null }];
          }),
          segment_filters: body.segment_filters.map((f) => ({ filter: f.filter ?? null, sample_rate: f.sample_rate, llm_scorers: f.llm_scorers })),
        };
        await c.env.DB.prepare(
          `INSERT INTO evaluation_settings (run_id, organization_id, project_id, settings, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
           ON CONFLICT (run_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`,
        )
          .bind(run.id, principal.organizationId, run.projectId, JSON.stringify(settings), nowMicros())
          .run();
        forgetRunSettings(run.id);
        return c.json(await settingsAnswer(c.env, principal.organizationId, settings), 200);
      },
    );
    app.openapi(
      createRoute({
        method: "post",
        path: `${path}/backfill`,
        tags: ["Evaluations"],
        summary: `Score a ${kind.replace("_", " ")}'s stored records`,
        description: "Scores the run's records created in `[start_time, end_time)` as an org-job (`GET /v2/org-jobs/{job_id}`, `job_name: score`, progress `{records_scored, records_skipped, errors}`). A result of an older version of a scorer is replaced. Admins only.",
        middleware: [adminOnly] as const,
        request: { params: Params, body: { content: { "application/json": { schema: Backfill } }, required: true } },
        responses: { 200: json(z.object({ job_id: z.string(), message: z.string() }), "The job"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses },
      }),
      async (c) => {
        const principal = c.get("principal");
        const params = c.req.valid("param") as Record<string, string>;
        const body = c.req.valid("json");
        const run = await ownedRun(c.env, principal, params.project_id!, params[param]!, kind);
        const start = Date.parse(body.start_time) * 1000;
        const end = Date.parse(body.end_time) * 1000;
        if (end <= start) throw new RequestValidationError([{ loc: ["body", "end_time"], msg: "Value error, end_time must be after start_time", type: "value_error" }]);
        const scorerIds = body.scorer_ids ? [...new Set(body.scorer_ids)] : null;
        if (scorerIds) {
          const known = await c.env.DB.prepare("SELECT id FROM scorers WHERE organization_id = ?1 AND id IN (SELECT value FROM json_each(?2))").bind(principal.organizationId, JSON.stringify(scorerIds)).all<{ id: string }>();
          const missing = scorerIds.filter((id) => !known.results.some((r) => r.id === id));
          if (missing.length > 0) throw new RequestValidationError([{ loc: ["body", "scorer_ids"], msg: `Value error, no scorer ${missing.map((m) => JSON.stringify(m)).join(", ")} in this organization`, type: "value_error" }]);
        } else if (!(await runSettings(c.env, run.id, true))) {
          throw new RequestValidationError([{ loc: ["body", "scorer_ids"], msg: "Value error, no scorer runs on this run: name scorer_ids, or PATCH its metric_settings first", type: "value_error" }]);
        }
        const jobId = await startBackfill(c.env, { organizationId: principal.organizationId, projectId: run.projectId, runId: run.id, createdBy: principal.userId, startMicros: start, endMicros: end, scorerIds });
        return c.json({ job_id: jobId, message: "The backfill is queued: GET /v2/org-jobs/{job_id} shows its progress." }, 200);
      },
    );
  }
}
