/**
 * The platform floor: HTTP in, one D1 call, the raw rows out. `POST /` with
 * `{"method": "all" | "raw" | "first" | "run" | "batch", "statements": [{"sql", "params"}]}` makes
 * that one call (a batch for several statements), exactly as the service's D1 call was made.
 * Nothing else: no authentication, no validation, no shaping of the rows, so its time is what the
 * platform charges for a request that makes that one D1 call.
 */
interface Env {
  DB: D1Database;
}

interface FloorRequest {
  method: "all" | "raw" | "first" | "run" | "batch";
  statements: { sql: string; params: unknown[] }[];
}

async function oneCall(db: D1Database, { method, statements }: FloorRequest): Promise<unknown> {
  const prepared = statements.map((s) => db.prepare(s.sql).bind(...s.params));
  const only = prepared[0];
  if (method === "batch" || prepared.length !== 1 || !only) return (await db.batch(prepared)).map((r) => r.results);
  if (method === "raw") return only.raw();
  if (method === "first") return only.first();
  if (method === "run") return (await only.run()).meta;
  return (await only.all()).results;
}

export default {
  async fetch(request, env) {
    if (request.method !== "POST") return new Response("floor worker: POST a D1 call to /\n");
    try {
      return Response.json(await oneCall(env.DB, (await request.json()) as FloorRequest));
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause;
      return Response.json({ error: String(error), cause: cause === undefined ? undefined : String(cause) }, { status: 500 });
    }
  },
} satisfies ExportedHandler<Env>;
