import { createApp } from "./app";
import { handleDeletionQueue } from "./deletion/deletion-queue-consumer";
import type { DeletionMessage, Env } from "./env";
import { runScheduledMaintenance } from "./maintenance/scheduled";

// Durable Object classes of the limits (wrangler.toml [[durable_objects.bindings]]).
export { PasswordGuard } from "./limits/password-guard";
export { ScanSlots } from "./limits/scan-slots";

const app = createApp();

const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

/** A body sent without a content type is read as JSON (as FastAPI does), not refused. */
function withDefaultContentType(request: Request): Request {
  if (!METHODS_WITH_BODY.has(request.method) || request.headers.has("content-type") || request.body === null) return request;
  const headers = new Headers(request.headers);
  headers.set("content-type", "application/json");
  return new Request(request, { headers });
}

export default {
  fetch: (request, env, ctx) => app.fetch(withDefaultContentType(request), env, ctx),
  queue: (batch, env) => handleDeletionQueue(batch, env),
  scheduled: (controller, env, ctx) => ctx.waitUntil(runScheduledMaintenance(env, controller.scheduledTime)),
} satisfies ExportedHandler<Env, DeletionMessage>;
