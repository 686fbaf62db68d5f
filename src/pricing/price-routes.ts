/**
 * Galileo's model price routes (contract, section 9): the price the service computes a model's
 * cost with, and an organization's overrides of it. Model names travel path-encoded (`/` and `:`
 * occur in them: `meta-llama/Llama-3.3-70B-Instruct-Turbo` is `meta-llama%2FLlama-...`).
 * Anyone of the organization may read prices; only admins change them.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { adminOnly } from "../auth/authenticate";
import { nowMicros } from "../db/client";
import { adminOnlyResponse, commonErrorResponses, tooLargeResponse } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { defaultPriceOf } from "./price-lookup";
import { listOverrides, modelKey, overrideOf, removeOverride, setOverride } from "./price-overrides";

const Price = z
  .object({
    input_price: z.number().nonnegative().max(1_000_000).openapi({ description: "USD per 1M input tokens" }),
    output_price: z.number().nonnegative().max(1_000_000).openapi({ description: "USD per 1M output tokens" }),
  })
  .openapi("ModelPrice");

const ModelNameParam = z.object({
  model_name: z
    .string()
    .min(1)
    .max(255)
    .openapi({ param: { name: "model_name", in: "path" }, description: "The model's name, path-encoded", example: "gpt-4o-mini-2024-07-18" }),
});

const ModelPrices = z
  .object({
    override: Price.nullable().openapi({ description: "The organization's override of this exact name, if any" }),
    default: Price.nullable().openapi({ description: "The built-in table's price (exact name, else its family), if any" }),
  })
  .openapi("ModelPrices");

const PriceOverride = z.object({ name: z.string(), price_overrides: Price.nullable() }).openapi("ModelPriceOverride");

const getPrices = createRoute({
  method: "get",
  path: "/models/{model_name}/prices",
  tags: ["Model prices"],
  summary: "The prices a model's cost is computed with",
  request: { params: ModelNameParam },
  responses: { 200: { content: { "application/json": { schema: ModelPrices } }, description: "Override and built-in price" }, ...commonErrorResponses },
});

const putOverride = createRoute({
  method: "put",
  path: "/models/{model_name}/price_overrides",
  tags: ["Model prices"],
  summary: "Set the organization's price of a model",
  description:
    "USD per 1M tokens. Applies to llm spans written afterwards (within a minute on every server), to this exact name and to the names of its family (a dated name such as `gpt-4o-2024-08-06` is in the family `gpt-4o`). Names compare without case. Admins only.",
  middleware: [adminOnly] as const,
  request: { params: ModelNameParam, body: { content: { "application/json": { schema: Price } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: PriceOverride } }, description: "The override" },
    ...adminOnlyResponse,
    ...tooLargeResponse,
    ...commonErrorResponses,
  },
});

const deleteOverride = createRoute({
  method: "delete",
  path: "/models/{model_name}/price_overrides",
  tags: ["Model prices"],
  summary: "Remove the organization's price of a model",
  description: "The built-in price applies again to spans written afterwards. Removing an override that does not exist is not an error. Admins only.",
  middleware: [adminOnly] as const,
  request: { params: ModelNameParam },
  responses: {
    200: { content: { "application/json": { schema: PriceOverride } }, description: "No override any more" },
    ...adminOnlyResponse,
    ...commonErrorResponses,
  },
});

const listPriceOverrides = createRoute({
  method: "get",
  path: "/models/price_overrides",
  tags: ["Model prices"],
  summary: "The organization's price overrides",
  responses: {
    200: { content: { "application/json": { schema: z.array(PriceOverride) } }, description: "Every override, by name" },
    ...commonErrorResponses,
  },
});

export function registerPrices(app: Router): void {
  // Before `/models/{model_name}/...`: `price_overrides` is not a model name here.
  app.openapi(listPriceOverrides, async (c) => {
    const rows = await listOverrides(c.env.DB, c.get("principal").organizationId);
    return c.json(rows.map((r) => ({ name: r.name, price_overrides: { input_price: r.input_price, output_price: r.output_price } })), 200);
  });

  app.openapi(getPrices, async (c) => {
    const { model_name } = c.req.valid("param");
    const override = await overrideOf(c.env.DB, c.get("principal").organizationId, model_name);
    return c.json({ override, default: defaultPriceOf(model_name) }, 200);
  });

  app.openapi(putOverride, async (c) => {
    const { model_name } = c.req.valid("param");
    const price = c.req.valid("json");
    await setOverride(c.env.DB, c.get("principal").organizationId, model_name, price, nowMicros());
    return c.json({ name: modelKey(model_name), price_overrides: { input_price: price.input_price, output_price: price.output_price } }, 200);
  });

  app.openapi(deleteOverride, async (c) => {
    const { model_name } = c.req.valid("param");
    await removeOverride(c.env.DB, c.get("principal").organizationId, model_name);
    return c.json({ name: modelKey(model_name), price_overrides: null }, 200);
  });
}
