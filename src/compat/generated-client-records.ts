/**
 * Search answers the `galileo-generated` client (npm, pinned 0.2.14) can parse.
 *
 * That client parses each returned record with a schema per kind, and because of how its zod
 * schemas are generated, a field it declares optional must still be *present* (null is fine):
 * a record that lacks one is not an error but silently becomes `{type: "UNKNOWN", raw}`, so the
 * caller loses typed access to everything. The contract (section 4) returns exactly the
 * selected columns, so a partial record normally lacks most of them.
 *
 * For requests from that client (it announces itself with `X-Galileo-SDK: galileo-generated/...`)
 * the search answers get the fields its schemas insist on, as null when the record has none
 * (not selected, or not stored). Every other client keeps the contract's exact projection. The
 * lists below are pinned by test/sdk-wire-format.test.ts against the generated schemas.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/app-env";
import type { Router } from "../http/create-router";

/** Fields every kind's generated schema requires to be present. */
const COMMON_FIELDS = [
  "created_at", "user_metadata", "tags", "metrics", "dataset_metadata", "feedback_rating_info", "annotations",
  "file_ids", "file_modalities", "annotation_aggregates",
] as const;

/** Fields a kind's generated schema also requires. Kinds it does not know (control) pass as they are. */
const FIELDS_BY_KIND: Record<string, readonly string[]> = {
  trace: COMMON_FIELDS,
  session: [...COMMON_FIELDS, "input"],
  workflow: [...COMMON_FIELDS, "input"],
  agent: [...COMMON_FIELDS, "input", "agent_type"],
  llm: [...COMMON_FIELDS, "input", "output"],
  retriever: [...COMMON_FIELDS, "output"],
  tool: COMMON_FIELDS,
};

const GENERATED_CLIENT = /^galileo-generated\//i;

export function withGeneratedClientFields(record: unknown): unknown {
  if (record === null || typeof record !== "object" || Array.isArray(record)) return record;
  const fields = FIELDS_BY_KIND[String((record as { type?: unknown }).type)];
  if (!fields) return record;
  const filled: Record<string, unknown> = { ...record };
  for (const field of fields) if (!(field in filled)) filled[field] = null;
  return filled;
}

const generatedClientRecords: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (!GENERATED_CLIENT.test(c.req.header("X-Galileo-SDK") ?? "") || c.res.status !== 200) return;
  const body = (await c.res.clone().json()) as { records?: unknown };
  if (!Array.isArray(body.records)) return;
  const headers = new Headers(c.res.headers);
  headers.delete("content-length");
  c.res = new Response(JSON.stringify({ ...body, records: body.records.map(withGeneratedClientFields) }), { status: 200, headers });
};

/** Must be registered before the search routes (middleware runs in registration order). */
export function registerGeneratedClientCompat(app: Router): void {
  for (const operation of ["partial_search", "search"]) {
    for (const segment of ["traces", "spans", "sessions"]) app.use(`/projects/:project_id/${segment}/${operation}`, generatedClientRecords);
  }
}
