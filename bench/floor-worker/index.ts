/**
 * The platform floor: HTTP in, one D1 call, the raw rows out. `POST /` with
 * `{"method": "all" | "raw" | "first" | "run" | "batch", "statements": [{"sql", "params"}]}` makes
 * that one call (a batch for several statements), exactly as the service's D1 call was made.
 * Nothing else: no authentication, no validation, no shaping of the rows, so its time is what the
 * platform charges for a request that makes that one D1 call.
 *
 * `POST /lines` with `{"sql", "page"}` is the floor of a streamed export (bench/export): the
 * statement's rows are `(rid, line)`, page after page (`?1` the last rid read, `?2` the page size),
 * read with `.raw()` and streamed as the client reads, each line as SQLite wrote it. Nothing else:
 * what any export through the D1 binding pays to move the same text.
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

interface LinesRequest {
  sql: string;
  page: number;
}

function streamLines(db: D1Database, { sql, page }: LinesRequest): Response {
  const encoder = new TextEncoder();
  let after = Number.MIN_SAFE_INTEGER;
  let done = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const rows = done ? [] : await db.prepare(sql).bind(after, page).raw<[number, string]>();
      if (rows.length === 0) return controller.close();
      done = rows.length < page;
      after = rows[rows.length - 1]![0];
      let text = "";
      for (const row of rows) text += `${row[1]}\n`;
      controller.enqueue(encoder.encode(text));
    },
  });
  return new Response(body, { headers: { "content-type": "application/x-ndjson" } });
}

export default {
  async fetch(request, env) {
    if (request.method !== "POST") return new Response("floor worker: POST a D1 call to /\n");
    if (new URL(request.url).pathname === "/lines") return streamLines(env.DB, (await request.json()) as LinesRequest);
    try {
      return Response.json(await oneCall(env.DB, (await request.json()) as FloorRequest));
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause;
      return Response.json({ error: String(error), cause: cause === undefined ? undefined : String(cause) }, { status: 500 });
    }
  },
} satisfies ExportedHandler<Env>;
