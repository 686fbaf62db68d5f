/**
 * Scorers and their versions (contract section 15): admins write, members read. A scorer is a
 * name unique in the organization, a type (`llm` or `preset`), an output type and the node types
 * it scores; what it computes is its latest version (a preset with params, or an LLM judge's
 * prompt). `GET /v2/scorers/{id}` adds its counts by status and its last error.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { adminOnly } from "../auth/authenticate";
import { nowMicros } from "../db/client";
import { adminOnlyResponse, commonErrorResponses, tooLargeResponse, Uuid } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { ApiError, notFound, RequestValidationError } from "../http/errors";
import { judgeOnce } from "./judge-calls";
import { parsePresetParams, PRESET_NAMES } from "./preset-definitions";
import { runPreset } from "./preset-scorers";
import { SCORABLE_COLUMNS, type ScorableRecord } from "./scorable-record";
import { projectRecordDatabases } from "./score-records";
import { type LlmDefinition, OUTPUT_TYPES, scorerAnswer, scorerById, scorerHealth, SCORER_SELECT, type ScorerRow, type VersionDefinition, versionAnswer, type VersionRow } from "./scorer-store";

export const SCORER_NAME = /^[a-z][a-z0-9_]{0,63}$/;
/** Scorers one organization may have. */
export const MAX_SCORERS_PER_ORGANIZATION = 500;
export const DEFAULT_DAILY_BUDGET = 10_000;

const NodeType = z.string().min(1).max(64).regex(/^[a-z_]+$/, "Value error, a node type is `trace`, `session` or a span type such as `llm`");

const ScorerFields = {
  description: z.string().max(2000).nullable().optional(),
  tags: z.array(z.string().min(1).max(100)).max(50).optional(),
  output_type: z.enum(OUTPUT_TYPES).optional(),
  scoreable_node_types: z.array(NodeType).min(1).max(20).optional(),
  daily_budget: z.number().int().min(0).max(10_000_000).optional().openapi({ description: "Judge calls a day (UTC); default 10,000. Past it, records wait as pending until the next day." }),
};

const CreateScorer = z
  .strictObject({
    name: z.string().regex(SCORER_NAME, "Value error, a scorer name is lower-case letters, digits and _, starting with a letter, at most 64 characters"),
    scorer_type: z.enum(["llm", "preset"]),
    ...ScorerFields,
  })
  .openapi("ScorerCreate");

const PatchScorer = z
  .strictObject({ name: CreateScorer.shape.name.optional(), ...ScorerFields })
  .openapi("ScorerUpdate");

const PresetVersion = z.strictObject({ preset: z.enum(PRESET_NAMES), params: z.record(z.string(), z.unknown()).default({}) }).openapi("ScorerPresetVersion");

const LlmVersion = z
  .strictObject({
    instructions: z.string().max(20_000).default(""),
    user_prompt: z.string().min(1).max(20_000).openapi({ description: "A template over {input}, {output}, {metadata.KEY}, {name}, {model}." }),
    model_name: z.string().min(1).max(200),
    num_judges: z.number().int().min(1).max(5).default(1),
    cot_enabled: z.boolean().default(false),
    output_type: z.enum(OUTPUT_TYPES).optional(),
    categories: z.array(z.string().min(1).max(100)).min(2).max(20).optional(),
    integration: z.enum(["custom", "openai"]).optional().openapi({ description: "The integration that serves model_name; by default the one that lists it (custom first)." }),
  })
  .openapi("ScorerLlmVersion");

const ListScorers = z
  .strictObject({
    filters: z
      .array(z.strictObject({ name: z.enum(["name", "scorer_type", "tags"]), value: z.string().max(200), operator: z.enum(["eq", "contains"]).default("eq") }))
      .max(10)
      .default([]),
    starting_token: z.number().int().min(0).default(0),
    limit: z.number().int().min(1).max(100).default(100),
  })
  .openapi("ScorerList");

const Scorer = z.record(z.string(), z.unknown()).openapi("Scorer");
const ScorerIdParam = z.object({ scorer_id: Uuid.openapi({ param: { name: "scorer_id", in: "path" } }) });
const json = <T extends z.ZodTypeAny>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });
const body = <T extends z.ZodTypeAny>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });
const TAGS = ["Evaluations"];

const routes = {
  create: createRoute({ method: "post", path: "/scorers", tags: TAGS, summary: "Create a scorer", middleware: [adminOnly] as const, request: body(CreateScorer), responses: { 200: json(Scorer, "The scorer"), 409: json(z.object({ detail: z.string() }), "The name is taken"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses } }),
  list: createRoute({ method: "post", path: "/scorers/list", tags: TAGS, summary: "The organization's scorers", request: { body: { content: { "application/json": { schema: ListScorers } }, required: false } }, responses: { 200: json(z.object({ scorers: z.array(Scorer), next_starting_token: z.number().nullable(), limit: z.number(), starting_token: z.number() }), "A page of scorers by name"), ...tooLargeResponse, ...commonErrorResponses } }),
  get: createRoute({ method: "get", path: "/scorers/{scorer_id}", tags: TAGS, summary: "A scorer, its latest version, its counts by status and its last error", request: { params: ScorerIdParam }, responses: { 200: json(Scorer, "The scorer"), ...commonErrorResponses } }),
  patch: createRoute({ method: "patch", path: "/scorers/{scorer_id}", tags: TAGS, summary: "Update a scorer", middleware: [adminOnly] as const, request: { params: ScorerIdParam, ...body(PatchScorer) }, responses: { 200: json(Scorer, "The scorer"), 409: json(z.object({ detail: z.string() }), "The name is taken"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses } }),
  remove: createRoute({ method: "delete", path: "/scorers/{scorer_id}", tags: TAGS, summary: "Delete a scorer (stored values stay on the records)", middleware: [adminOnly] as const, request: { params: ScorerIdParam }, responses: { 200: json(z.object({ id: z.string(), deleted: z.literal(true) }), "Deleted"), ...adminOnlyResponse, ...commonErrorResponses } }),
  presetVersion: createRoute({ method: "post", path: "/scorers/{scorer_id}/version/preset", tags: TAGS, summary: "A new version of a preset scorer", middleware: [adminOnly] as const, request: { params: ScorerIdParam, ...body(PresetVersion) }, responses: { 200: json(z.record(z.string(), z.unknown()), "The version"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses } }),
  llmVersion: createRoute({ method: "post", path: "/scorers/{scorer_id}/version/llm", tags: TAGS, summary: "A new version of an LLM judge", middleware: [adminOnly] as const, request: { params: ScorerIdParam, ...body(LlmVersion) }, responses: { 200: json(z.record(z.string(), z.unknown()), "The version"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses } }),
  versions: createRoute({ method: "get", path: "/scorers/{scorer_id}/versions", tags: TAGS, summary: "A scorer's versions, newest first", request: { params: ScorerIdParam }, responses: { 200: json(z.array(z.record(z.string(), z.unknown())), "The versions"), ...commonErrorResponses } }),
};

const TestOnRecord = z.strictObject({ project_id: Uuid, record_id: z.string().min(1).max(200) }).openapi("ScorerTest");
const testRoute = createRoute({
  method: "post",
  path: "/scorers/{scorer_id}/test",
  tags: TAGS,
  summary: "Run a scorer's current version on one stored record, storing nothing",
  description: "Answers what `metric_info.<name>` would hold. An LLM judge's test call is paced like any (a 429 with Retry-After past the integration's requests per minute) and not counted in the daily budget. Admins only (a judge call may cost money).",
  middleware: [adminOnly] as const,
  request: { params: ScorerIdParam, body: { content: { "application/json": { schema: TestOnRecord } }, required: true } },
  responses: { 200: json(z.object({ scorer_id: z.string(), version: z.number(), record_id: z.string(), result: z.record(z.string(), z.unknown()) }), "The result, not stored"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses },
});

const nameTaken = (name: string) => new ApiError(409, `A scorer named "${name}" already exists in this organization`);
const isUniqueViolation = (error: unknown) => /UNIQUE constraint failed: scorers\./.test(`${String(error)} ${String((error as { cause?: unknown })?.cause ?? "")}`);

async function mustFind(env: Parameters<typeof scorerById>[0], organizationId: string, id: string): Promise<ScorerRow> {
  const row = await scorerById(env, organizationId, id);
  if (!row) throw notFound("Scorer");
  return row;
}

/** Adds a version and makes it the scorer's current one; the version number is the next free one. */
async function addVersion(env: Parameters<typeof scorerById>[0], scorer: ScorerRow, definition: VersionDefinition): Promise<VersionRow> {
  const id = crypto.randomUUID();
  const now = nowMicros();
  const [inserted] = await env.DB.batch<VersionRow>([
    env.DB.prepare(
      `INSERT INTO scorer_versions (id, scorer_id, version, kind, definition, created_at)
       SELECT ?1, ?2, coalesce(max(version), 0) + 1, ?3, ?4, ?5 FROM scorer_versions WHERE scorer_id = ?2
       RETURNING id, scorer_id, version, kind, definition, created_at`,
    ).bind(id, scorer.id, definition.kind, JSON.stringify(definition), now),
    env.DB.prepare("UPDATE scorers SET version_id = ?1, updated_at = ?3 WHERE id = ?2").bind(id, scorer.id, now),
  ]);
  return inserted!.results[0]!;
}

export function registerScorers(app: Router): void {
  app.openapi(routes.create, async (c) => {
    const principal = c.get("principal");
    const b = c.req.valid("json");
    const now = nowMicros();
    const id = crypto.randomUUID();
    try {
      const inserted = await c.env.DB.prepare(
        `INSERT INTO scorers (id, organization_id, name, scorer_type, description, tags, output_type, scoreable_node_types, daily_budget, version_id, created_at, updated_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL, ?10, ?10 WHERE (SELECT count(*) FROM scorers WHERE organization_id = ?2) < ?11`,
      )
        .bind(id, principal.organizationId, b.name, b.scorer_type, b.description ?? null, JSON.stringify(b.tags ?? []), b.output_type ?? "boolean", JSON.stringify(b.scoreable_node_types ?? ["llm"]), b.daily_budget ?? DEFAULT_DAILY_BUDGET, now, MAX_SCORERS_PER_ORGANIZATION)
        .run();
      if (inserted.meta.changes === 0) throw new ApiError(409, `This organization has ${MAX_SCORERS_PER_ORGANIZATION} scorers already; delete one first`);
    } catch (error) {
      if (isUniqueViolation(error)) throw nameTaken(b.name);
      throw error;
    }
    return c.json(scorerAnswer(await mustFind(c.env, principal.organizationId, id)), 200);
  });

  app.openapi(routes.list, async (c) => {
    const principal = c.get("principal");
    const b = ListScorers.parse((await c.req.json().catch(() => ({}))) ?? {});
    const conditions = ["s.organization_id = ?1"];
    const params: unknown[] = [principal.organizationId];
    for (const f of b.filters) {
      // `contains` by instr, not LIKE: D1 refuses LIKE patterns over 50 bytes ("pattern too complex").
      params.push(f.operator === "eq" ? f.value : f.value.toLowerCase());
      const p = `?${params.length}`;
      if (f.name === "tags") conditions.push(f.operator === "eq" ? `EXISTS (SELECT 1 FROM json_each(s.tags) WHERE value = ${p})` : `EXISTS (SELECT 1 FROM json_each(s.tags) WHERE instr(lower(value), ${p}) > 0)`);
      else conditions.push(f.operator === "eq" ? `s.${f.name} = ${p}` : `instr(lower(s.${f.name}), ${p}) > 0`);
    }
    params.push(b.limit + 1, b.starting_token);
    const rows = await c.env.DB.prepare(`${SCORER_SELECT} WHERE ${conditions.join(" AND ")} ORDER BY s.name LIMIT ?${params.length - 1} OFFSET ?${params.length}`)
      .bind(...params)
      .all<ScorerRow>();
    const page = rows.results.slice(0, b.limit);
    return c.json({ scorers: page.map(scorerAnswer), next_starting_token: rows.results.length > b.limit ? b.starting_token + b.limit : null, limit: b.limit, starting_token: b.starting_token }, 200);
  });

  app.openapi(routes.get, async (c) => {
    const principal = c.get("principal");
    const row = await mustFind(c.env, principal.organizationId, c.req.valid("param").scorer_id);
    return c.json({ ...scorerAnswer(row), ...(await scorerHealth(c.env, row.id)) }, 200);
  });

  app.openapi(routes.patch, async (c) => {
    const principal = c.get("principal");
    const { scorer_id } = c.req.valid("param");
    const b = c.req.valid("json");
    const row = await mustFind(c.env, principal.organizationId, scorer_id);
    try {
      await c.env.DB.prepare(
        `UPDATE scorers SET name = ?3, description = ?4, tags = ?5, output_type = ?6, scoreable_node_types = ?7, daily_budget = ?8, updated_at = ?9 WHERE id = ?1 AND organization_id = ?2`,
      )
        .bind(
          scorer_id,
          principal.organizationId,
          b.name ?? row.name,
          b.description === undefined ? row.description : b.description,
          b.tags ? JSON.stringify(b.tags) : row.tags,
          b.output_type ?? row.output_type,
          b.scoreable_node_types ? JSON.stringify(b.scoreable_node_types) : row.scoreable_node_types,
          b.daily_budget ?? row.daily_budget,
          nowMicros(),
        )
        .run();
    } catch (error) {
      if (isUniqueViolation(error) && b.name) throw nameTaken(b.name);
      throw error;
    }
    return c.json(scorerAnswer(await mustFind(c.env, principal.organizationId, scorer_id)), 200);
  });

  app.openapi(routes.remove, async (c) => {
    const principal = c.get("principal");
    const { scorer_id } = c.req.valid("param");
    const deleted = await c.env.DB.prepare("DELETE FROM scorers WHERE id = ?1 AND organization_id = ?2").bind(scorer_id, principal.organizationId).run();
    if (deleted.meta.changes === 0) throw notFound("Scorer");
    return c.json({ id: scorer_id, deleted: true as const }, 200);
  });

  app.openapi(routes.presetVersion, async (c) => {
    const principal = c.get("principal");
    const scorer = await mustFind(c.env, principal.organizationId, c.req.valid("param").scorer_id);
    const b = c.req.valid("json");
    if (scorer.scorer_type !== "preset") throw wrongType("preset", scorer.scorer_type);
    const parsed = parsePresetParams(b.preset, b.params);
    if (!parsed.ok) throw new RequestValidationError(parsed.faults);
    return c.json(versionAnswer(await addVersion(c.env, scorer, { kind: "preset", preset: parsed.definition })), 200);
  });

  app.openapi(routes.llmVersion, async (c) => {
    const principal = c.get("principal");
    const scorer = await mustFind(c.env, principal.organizationId, c.req.valid("param").scorer_id);
    const b = c.req.valid("json");
    if (scorer.scorer_type !== "llm") throw wrongType("llm", scorer.scorer_type);
    const outputType = b.output_type ?? scorer.output_type;
    if (outputType === "categorical" && !b.categories) {
      throw new RequestValidationError([{ loc: ["body", "categories"], msg: "Value error, a categorical judge lists its categories (2 to 20)", type: "value_error" }]);
    }
    const integration = b.integration ?? (await integrationServing(c.env.DB, principal.organizationId, b.model_name));
    const llm: LlmDefinition = {
      instructions: b.instructions,
      user_prompt: b.user_prompt,
      model_name: b.model_name,
      num_judges: b.num_judges,
      cot_enabled: b.cot_enabled,
      output_type: outputType,
      categories: outputType === "categorical" ? b.categories! : null,
      integration,
    };
    return c.json(versionAnswer(await addVersion(c.env, scorer, { kind: "llm", llm })), 200);
  });

  app.openapi(testRoute, async (c) => {
    const principal = c.get("principal");
    const scorer = await mustFind(c.env, principal.organizationId, c.req.valid("param").scorer_id);
    const b = c.req.valid("json");
    if (!scorer.version_id || !scorer.v_definition) throw new RequestValidationError([{ loc: ["path", "scorer_id"], msg: "Value error, the scorer has no version yet: add one first", type: "value_error" }]);
    // The record wherever its partition is: the project's shard, else its other partition shards (contract section 13).
    const [home, ...others] = await projectRecordDatabases(c.env, principal.organizationId, b.project_id);
    const read = (db: D1Database) => db.prepare(`SELECT ${SCORABLE_COLUMNS} FROM records WHERE project_id = ?1 AND id = ?2`).bind(b.project_id, b.record_id).first<ScorableRecord>();
    const record = (await read(home!.db)) ?? (await Promise.all(others.map((o) => read(o.db)))).find((r) => r !== null) ?? null;
    if (!record) throw notFound("Record");
    const definition = JSON.parse(scorer.v_definition) as VersionDefinition;
    let result: Record<string, unknown>;
    if (definition.kind === "preset") {
      const outcome = runPreset(definition.preset, record);
      result = "skipped" in outcome ? { status_type: "not_applicable", message: `not scored: ${outcome.skipped}` } : { status_type: "success", value: outcome.value };
    } else {
      const judged = await judgeOnce(c.env, principal.organizationId, definition.llm, record);
      if ("retryAfterS" in judged) throw new ApiError(429, "The judge integration's requests per minute are used up; retry after the minute", { "Retry-After": String(judged.retryAfterS) });
      result = judged;
    }
    return c.json({ scorer_id: scorer.id, version: scorer.v_version!, record_id: record.id, result }, 200);
  });

  app.openapi(routes.versions, async (c) => {
    const principal = c.get("principal");
    const scorer = await mustFind(c.env, principal.organizationId, c.req.valid("param").scorer_id);
    const rows = await c.env.DB.prepare("SELECT id, scorer_id, version, kind, definition, created_at FROM scorer_versions WHERE scorer_id = ?1 ORDER BY version DESC LIMIT 100").bind(scorer.id).all<VersionRow>();
    return c.json(rows.results.map(versionAnswer), 200);
  });
}

function wrongType(wanted: string, actual: string): RequestValidationError {
  const msg = `Value error, this is a ${actual} scorer: it takes ${actual} versions, not ${wanted} ones`;
  return new RequestValidationError([{ loc: ["path", "scorer_id"], msg, type: "value_error" }]);
}

/** The integration whose models list the model (custom first); custom when none does (its call will say what is missing). */
async function integrationServing(db: D1Database, organizationId: string, model: string): Promise<"custom" | "openai"> {
  const rows = await db.prepare("SELECT name, models FROM judge_integrations WHERE organization_id = ?1 ORDER BY name").bind(organizationId).all<{ name: "custom" | "openai"; models: string }>();
  const serving = rows.results.find((r) => (JSON.parse(r.models) as string[]).includes(model));
  if (serving) return serving.name;
  return rows.results.some((r) => r.name === "custom") || rows.results.length === 0 ? "custom" : rows.results[0]!.name;
}
