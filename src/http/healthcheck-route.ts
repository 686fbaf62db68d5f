import { createRoute, z } from "@hono/zod-openapi";
import type { Router } from "./create-router";

export const API_VERSION = "0.1.0";

const Healthcheck = z.object({ api_version: z.string(), message: z.string(), version: z.string() }).openapi("Healthcheck");

const healthcheck = createRoute({
  method: "get",
  path: "/healthcheck",
  tags: ["Service"],
  summary: "Liveness check (no authentication, no database)",
  responses: { 200: { content: { "application/json": { schema: Healthcheck } }, description: "The service is up" } },
});

export function registerHealthcheck(app: Router): void {
  app.openapi(healthcheck, (c) => c.json({ api_version: API_VERSION, message: "ok", version: API_VERSION }, 200));
}
