/**
 * Judge model integrations (contract section 15): `PUT /v2/integrations/custom` (any
 * OpenAI-compatible endpoint) and `PUT /v2/integrations/openai` (admins), `GET
 * /v2/integrations` (members; never a secret), `DELETE /v2/integrations/{name}`. Deployed, an
 * endpoint on a private, loopback or link-local address is a 422 (the alerts' address rules);
 * JUDGE_DESTINATIONS=local (wrangler dev) allows them.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { checkDestination } from "../alerts/destination-rules";
import { adminOnly } from "../auth/authenticate";
import { microsToIso, nowMicros } from "../db/client";
import { adminOnlyResponse, commonErrorResponses, tooLargeResponse } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { notFound, RequestValidationError } from "../http/errors";
import { sealKey } from "./judge-keys";

export const OPENAI_ENDPOINT = "https://api.openai.com/v1";
const Pacing = {
  max_concurrency: z.number().int().min(1).max(64).default(4),
  requests_per_minute: z.number().int().min(1).max(100_000).default(60),
};
const Custom = z
  .strictObject({
    endpoint: z.string().min(1).max(2048),
    api_key_header: z.string().min(1).max(100).regex(/^[A-Za-z0-9-]+$/, "Value error, a header name").default("Authorization"),
    api_key_value: z.string().min(1).max(4096),
    models: z.array(z.string().min(1).max(200)).min(1).max(100),
    default_model: z.string().min(1).max(200).nullable().optional(),
    ...Pacing,
  })
  .openapi("CustomIntegration");
const OpenAi = z
  .strictObject({ token: z.string().min(1).max(4096), models: z.array(z.string().min(1).max(200)).max(100).default(["gpt-4o-mini", "gpt-4o", "gpt-4.1-mini", "gpt-4.1"]), default_model: z.string().max(200).nullable().optional(), ...Pacing })
  .openapi("OpenAiIntegration");

interface IntegrationRow {
  name: string;
  endpoint: string;
  api_key_header: string;
  models: string;
  default_model: string | null;
  max_concurrency: number;
  requests_per_minute: number;
  created_at: number;
  updated_at: number;
}

const answer = (r: IntegrationRow) => ({
  name: r.name,
  endpoint: r.endpoint,
  api_key_header: r.api_key_header,
  models: JSON.parse(r.models) as string[],
  default_model: r.default_model,
  max_concurrency: r.max_concurrency,
  requests_per_minute: r.requests_per_minute,
  created_at: microsToIso(r.created_at),
  updated_at: microsToIso(r.updated_at),
});

const Integration = z.record(z.string(), z.unknown()).openapi("Integration");
const json = <T extends z.ZodTypeAny>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });
const TAGS = ["Evaluations"];
const SELECT = "SELECT name, endpoint, api_key_header, models, default_model, max_concurrency, requests_per_minute, created_at, updated_at FROM judge_integrations";

const UPSERT = `INSERT INTO judge_integrations (organization_id, name, endpoint, api_key_header, key_sealed, models, default_model, max_concurrency, requests_per_minute, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)
ON CONFLICT (organization_id, name) DO UPDATE SET endpoint = excluded.endpoint, api_key_header = excluded.api_key_header, key_sealed = excluded.key_sealed,
  models = excluded.models, default_model = excluded.default_model, max_concurrency = excluded.max_concurrency, requests_per_minute = excluded.requests_per_minute, updated_at = excluded.updated_at`;

export function registerIntegrations(app: Router): void {
  app.openapi(
    createRoute({ method: "put", path: "/integrations/custom", tags: TAGS, summary: "Set the OpenAI-compatible judge endpoint", middleware: [adminOnly] as const, request: { body: { content: { "application/json": { schema: Custom } }, required: true } }, responses: { 200: json(Integration, "The integration (no secret)"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses } }),
    async (c) => {
      const principal = c.get("principal");
      const b = c.req.valid("json");
      const verdict = checkDestination(b.endpoint, "webhook", c.env.JUDGE_DESTINATIONS === "local");
      if (!verdict.ok) throw new RequestValidationError([{ loc: ["body", "endpoint"], msg: `Value error, ${verdict.reason}`, type: "value_error" }]);
      const endpoint = b.endpoint.replace(/\/+$/, "");
      await c.env.DB.prepare(UPSERT)
        .bind(principal.organizationId, "custom", endpoint, b.api_key_header, await sealKey(c.env, b.api_key_value), JSON.stringify(b.models), b.default_model ?? b.models[0]!, b.max_concurrency, b.requests_per_minute, nowMicros())
        .run();
      const row = await c.env.DB.prepare(`${SELECT} WHERE organization_id = ?1 AND name = 'custom'`).bind(principal.organizationId).first<IntegrationRow>();
      return c.json(answer(row!), 200);
    },
  );
  app.openapi(
    createRoute({ method: "put", path: "/integrations/openai", tags: TAGS, summary: "Set the OpenAI judge key", middleware: [adminOnly] as const, request: { body: { content: { "application/json": { schema: OpenAi } }, required: true } }, responses: { 200: json(Integration, "The integration (no secret)"), ...adminOnlyResponse, ...tooLargeResponse, ...commonErrorResponses } }),
    async (c) => {
      const principal = c.get("principal");
      const b = c.req.valid("json");
      await c.env.DB.prepare(UPSERT)
        .bind(principal.organizationId, "openai", OPENAI_ENDPOINT, "Authorization", await sealKey(c.env, b.token), JSON.stringify(b.models), b.default_model ?? b.models[0] ?? null, b.max_concurrency, b.requests_per_minute, nowMicros())
        .run();
      const row = await c.env.DB.prepare(`${SELECT} WHERE organization_id = ?1 AND name = 'openai'`).bind(principal.organizationId).first<IntegrationRow>();
      return c.json(answer(row!), 200);
    },
  );
  app.openapi(
    createRoute({ method: "get", path: "/integrations", tags: TAGS, summary: "The organization's judge integrations (never a secret)", responses: { 200: json(z.array(Integration), "The integrations"), ...commonErrorResponses } }),
    async (c) => {
      const rows = await c.env.DB.prepare(`${SELECT} WHERE organization_id = ?1 ORDER BY name`).bind(c.get("principal").organizationId).all<IntegrationRow>();
      return c.json(rows.results.map(answer), 200);
    },
  );
  app.openapi(
    createRoute({ method: "delete", path: "/integrations/{name}", tags: TAGS, summary: "Remove a judge integration", middleware: [adminOnly] as const, request: { params: z.object({ name: z.enum(["custom", "openai"]).openapi({ param: { name: "name", in: "path" } }) }) }, responses: { 200: json(z.object({ name: z.string(), deleted: z.literal(true) }), "Deleted"), ...adminOnlyResponse, ...commonErrorResponses } }),
    async (c) => {
      const { name } = c.req.valid("param");
      const deleted = await c.env.DB.prepare("DELETE FROM judge_integrations WHERE organization_id = ?1 AND name = ?2").bind(c.get("principal").organizationId, name).run();
      if (deleted.meta.changes === 0) throw notFound("Integration");
      return c.json({ name, deleted: true as const }, 200);
    },
  );
}
