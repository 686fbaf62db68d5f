/**
 * The service's own entry point, with its D1 binding observed: every request answers as the
 * service does, and `GET /__bench/d1-calls` then returns the D1 calls (statements and
 * parameters) that the previous request made. The bench sends one request at a time.
 */
import service from "../../src/index";
import { type D1Call, observeD1 } from "../../src/http/d1-round-trips";
import type { Env } from "../../src/env";

// The service's Durable Objects (its scan slots and password guard), which its bindings name.
export { PasswordGuard } from "../../src/limits/password-guard";
export { ScanSlots } from "../../src/limits/scan-slots";

let lastCalls: D1Call[] = [];

export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__bench/d1-calls") return Response.json(lastCalls);
    const calls: D1Call[] = [];
    lastCalls = calls;
    const db = observeD1(env.DB, (call) => calls.push(call));
    const observed = new Proxy(env, { get: (target, property, receiver) => (property === "DB" ? db : Reflect.get(target, property, receiver)) });
    return service.fetch(request, observed, ctx);
  },
} satisfies ExportedHandler<Env>;
