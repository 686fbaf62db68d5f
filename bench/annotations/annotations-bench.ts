/**
 * The annotations write-side benchmark (issue 20, part 8). On a private copy of the search
 * benchmark's dataset (1M records by default), `wrangler dev` of the service, in one run:
 *
 * 1. a rating write (PUT of the caller's rating on a trace, with a template made through the API)
 *    against the natural "one span" write, POST /v2/projects/{pid}/spans with one small span
 *    under an existing trace (streaming ingestion, as the SDK posts a span when it is added). The
 *    two are sent alternately, one at a time, so that both see the same conditions. Target: the
 *    rating's endpoint p50 within 1.5 × the span's.
 * 2. adding records to an annotation queue by filter (POST /v2/annotation_queues/{qid}/records
 *    with a filter tree matching every trace of the run: at 1M records that is the run's 100,000
 *    traces, the most one add takes; smaller datasets have fewer, all added) while a second client
 *    sends a search back to back on the same database (the bench project lives on the catalog
 *    database, which is its shard). The add works in the request, 125 records a chunk, paced (see
 *    docs/annotations.md, "Adding, removing, counting"): no queue message continues it, so it is
 *    done when the request answers; the count route then confirms the queue holds every record.
 *    Target: the search's p95 during the add under 2 × its idle p95, measured just before. A
 *    small dataset's add is over in a few chunks, so it is repeated into new queues until enough
 *    searches ran during adds (at 1M one add is enough).
 *
 * The copy is removed afterwards.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { copyDataset, type Dataset, discardCopy, ensureDataset } from "../dataset/dataset-cache";
import { expectStatus, timedJson } from "../lib/http-timing";
import { markdownTable, runConditions } from "../lib/markdown-report";
import { finishReport } from "../lib/finish-report";
import { SERVICE_CONFIG } from "../lib/paths";
import { queryJson } from "../lib/sqlite-cli";
import { count, median, ms, percentile, ratio } from "../lib/stats";
import { type DevServer, withDevServer } from "../lib/wrangler-dev";
import { BENCH_VARS } from "../search/search-bench";
import { SEARCH_SHAPES, shapePath } from "../search/search-shapes";
import { QUEUE_LIMITS } from "../../src/annotation-queues/queue-schemas";

export interface AnnotationsBenchOptions {
  size: number;
  seed: number;
  quick: boolean;
}

/** The most records one add takes (contract section 8). */
const MAX_ADD = QUEUE_LIMITS.maxRecordsPerAdd;
const SEARCH_TIMEOUT_MS = 30_000;
/** The add's own timeout: 800 chunks at 1M records, on a loaded machine. */
const ADD_TIMEOUT_MS = 1_800_000;

interface WritesRun {
  rating: number[];
  span: number[];
  ratingRoundTrips: number[];
  spanRoundTrips: number[];
}

interface AddRound {
  ms: number;
  added: number;
  /** What the count route answered once the add had answered. */
  counted: number;
  roundTrips: number | undefined;
}

interface AddRun {
  /** Traces of the run the filter matches (all of them), computed on the file. */
  matching: number;
  expected: number;
  /** The first add, then its repeats into new queues (small datasets: see measureAdd). */
  adds: AddRound[];
  idle: number[];
  /** Every search sent while the add ran (the last may be answered after it: it waited on it too). */
  during: number[];
}

interface Fixture {
  templateId: string;
  traceIds: string[];
}

/** Searches during adds wanted for the p95, and the most adds repeated to get them. */
const MIN_DURING = 100;
const MAX_ROUNDS = 60;

const headersOf = (dataset: Dataset) => ({ "Service-API-Key": dataset.manifest.tenant.apiKey });

/** The filter of the add: every trace of the run (created in or after the dataset's window). */
function everyTraceFilter(dataset: Dataset) {
  const from = new Date(Math.floor(dataset.manifest.window.startMicros / 1000)).toISOString();
  return { filter: { type: "date", column_id: "created_at", operator: "gte", value: from } };
}

async function runTraces(dataset: Dataset): Promise<{ ids: string[]; total: number }> {
  const { logStreamId } = dataset.manifest.tenant;
  const ids = await queryJson<{ id: string }>(dataset.sqliteFile, {
    sql: "SELECT id FROM records WHERE run_id = ? AND record_type = 'trace' ORDER BY created_at DESC, id DESC LIMIT 1000",
    params: [logStreamId],
  });
  const [row] = await queryJson<{ n: number }>(dataset.sqliteFile, {
    sql: "SELECT count(*) AS n FROM records WHERE run_id = ? AND record_type = 'trace' AND created_at >= ?",
    params: [logStreamId, dataset.manifest.window.startMicros],
  });
  return { ids: ids.map((r) => r.id), total: row?.n ?? 0 };
}

async function createFixture(server: DevServer, dataset: Dataset, traceIds: string[]): Promise<Fixture> {
  const headers = headersOf(dataset);
  const { projectId } = dataset.manifest.tenant;
  const template = expectStatus(
    await timedJson<{ id: string }>(`${server.baseUrl}/v2/projects/${projectId}/annotation/templates`, {
      body: { name: "bench-helpful", constraints: { annotation_type: "like_dislike" } },
      headers,
    }),
    200,
    "create template",
  ).body;
  return { templateId: template.id, traceIds };
}

async function createQueue(server: DevServer, dataset: Dataset, name: string): Promise<string> {
  const headers = headersOf(dataset);
  return expectStatus(await timedJson<{ id: string }>(`${server.baseUrl}/v2/annotation_queues`, { body: { name: { value: name } }, headers }), 200, "create queue").body.id;
}

/** Rating PUTs and one-span POSTs, alternately, each on the next trace (a new rating, a new span). */
async function measureWrites(server: DevServer, dataset: Dataset, fixture: Fixture, quick: boolean): Promise<WritesRun> {
  const headers = headersOf(dataset);
  const { projectId, logStreamId } = dataset.manifest.tenant;
  const warmup = 10;
  const n = Math.min(quick ? 40 : 200, fixture.traceIds.length - warmup);
  const run: WritesRun = { rating: [], span: [], ratingRoundTrips: [], spanRoundTrips: [] };
  for (let i = 0; i < warmup + n; i += 1) {
    const traceId = fixture.traceIds[i]!;
    const rating = expectStatus(
      await timedJson(`${server.baseUrl}/v2/projects/${projectId}/annotation/templates/${fixture.templateId}/records/${traceId}/rating`, {
        method: "PUT",
        body: { rating: { annotation_type: "like_dislike", value: i % 3 !== 0 } },
        headers,
      }),
      200,
      "rating PUT",
    );
    const span = expectStatus(
      await timedJson(`${server.baseUrl}/v2/projects/${projectId}/spans`, {
        body: {
          log_stream_id: logStreamId,
          trace_id: traceId,
          parent_id: traceId,
          spans: [{ id: crypto.randomUUID(), type: "llm", name: "bench-span", input: "short input", output: "short output", model: "gpt-4o-mini" }],
        },
        headers,
      }),
      200,
      "span POST",
    );
    if (i < warmup) continue;
    run.rating.push(rating.ms);
    run.span.push(span.ms);
    if (rating.roundTrips !== undefined) run.ratingRoundTrips.push(rating.roundTrips);
    if (span.roundTrips !== undefined) run.spanRoundTrips.push(span.roundTrips);
  }
  return run;
}

/** One add by filter into a new queue, with the search sent back to back meanwhile. */
async function addRound(server: DevServer, dataset: Dataset, round: number, search: () => Promise<number>): Promise<AddRound & { during: number[] }> {
  const headers = headersOf(dataset);
  const { projectId, logStreamId } = dataset.manifest.tenant;
  const queueId = await createQueue(server, dataset, `bench-queue-${round}`);
  let adding = true;
  const during: number[] = [];
  let searchFailure: unknown;
  const searching = (async () => {
    while (adding) {
      try {
        during.push(await search());
      } catch (error) {
        searchFailure = error;
        return;
      }
    }
  })();
  const started = performance.now();
  let add;
  try {
    add = expectStatus(
      await timedJson<{ num_records_added: number }>(`${server.baseUrl}/v2/annotation_queues/${queueId}/records`, {
        body: { project_id: projectId, run_id: logStreamId, record_selector: { type: "filter_tree", filter_tree: everyTraceFilter(dataset), record_type: "trace" } },
        headers,
        timeoutMs: ADD_TIMEOUT_MS,
        // Sent once: a re-sent add would answer 0 added (the records are already there).
        repeatable: false,
      }),
      200,
      "add by filter",
    );
  } finally {
    adding = false;
    await searching;
  }
  const ms = performance.now() - started;
  if (searchFailure) throw new Error(`the search failed during the add: ${String(searchFailure)}`, { cause: searchFailure });
  const counted = expectStatus(await timedJson<{ count: number }>(`${server.baseUrl}/v2/annotation_queues/${queueId}/records/count`, { body: {}, headers }), 200, "count").body.count;
  return { ms, added: add.body.num_records_added, counted, roundTrips: add.roundTrips, during };
}

/**
 * The idle search p95, then the add by filter with the same search sent back to back meanwhile.
 * At 1M records one add lasts long enough for hundreds of searches; a small dataset's add is over
 * in a few chunks, so it is repeated (each into a new queue, the same work) until MIN_DURING
 * searches ran during adds, for a p95 that means something.
 */
async function measureAdd(server: DevServer, dataset: Dataset, matching: number, quick: boolean): Promise<AddRun> {
  const headers = headersOf(dataset);
  const shape = SEARCH_SHAPES.find((s) => s.id === "first-page")!;
  const searchUrl = `${server.baseUrl}${shapePath(shape, dataset.manifest)}`;
  const searchBody: unknown = shape.body(dataset.manifest);
  const search = async () => expectStatus(await timedJson(searchUrl, { body: searchBody, headers, timeoutMs: SEARCH_TIMEOUT_MS }), 200, "search").ms;

  for (let i = 0; i < 5; i += 1) await search();
  const idle: number[] = [];
  for (let i = 0; i < (quick ? 20 : 100); i += 1) idle.push(await search());

  const during: number[] = [];
  const adds: AddRound[] = [];
  const minDuring = quick ? 10 : MIN_DURING;
  while (adds.length === 0 || (during.length < minDuring && adds.length < MAX_ROUNDS)) {
    const { during: searches, ...round } = await addRound(server, dataset, adds.length, search);
    adds.push(round);
    during.push(...searches);
  }
  return { matching, expected: Math.min(matching, MAX_ADD), adds, idle, during };
}

export async function runAnnotationsBench(options: AnnotationsBenchOptions): Promise<string> {
  const startLoad = os.loadavg();
  const dataset = await ensureDataset(options.size, options.seed);
  console.log(`\nannotations @ ${count(options.size)} records`);
  const copy = copyDataset(dataset, "annotations");
  let writes: WritesRun;
  let add: AddRun;
  try {
    const traces = await runTraces(copy);
    ({ writes, add } = await withDevServer(
      { name: "annotations", config: SERVICE_CONFIG, persistTo: copy.persistDir, vars: BENCH_VARS, readyPath: "/healthcheck" },
      async (server) => {
        const fixture = await createFixture(server, copy, traces.ids);
        const writes = await measureWrites(server, copy, fixture, options.quick);
        console.log(`  rating PUT p50 ${ms(median(writes.rating))} ms, one-span POST p50 ${ms(median(writes.span))} ms (${writes.rating.length} each)`);
        const add = await measureAdd(server, copy, traces.total, options.quick);
        console.log(`  add by filter: ${count(add.adds[0]!.added)} records in ${(add.adds[0]!.ms / 1000).toFixed(2)} s (${add.adds.length} adds); search p95 idle ${ms(percentile(add.idle, 95))} ms, during ${ms(percentile(add.during, 95))} ms (${add.during.length} searches)`);
        return { writes, add };
      },
    ));
  } finally {
    discardCopy(copy);
  }

  const ratingP50 = median(writes.rating);
  const spanP50 = median(writes.span);
  const idleP95 = percentile(add.idle, 95);
  const duringP95 = percentile(add.during, 95);
  const failures: string[] = [];
  if (!(ratingP50 <= 1.5 * spanP50)) failures.push(`rating PUT p50 ${ms(ratingP50)} ms is ${ratio(ratingP50 / spanP50)} the one-span POST's ${ms(spanP50)} ms (target ≤ 1.5×)`);
  for (const [i, round] of add.adds.entries()) {
    if (round.added !== add.expected) failures.push(`add ${i + 1} answered ${round.added} records added, expected ${add.expected}`);
    if (round.counted !== add.expected) failures.push(`the queue of add ${i + 1} counts ${round.counted} records after it, expected ${add.expected}`);
  }
  const first = add.adds[0]!;
  const addTimes = add.adds.map((round) => round.ms);
  if (add.during.length === 0) failures.push("no search completed during the add: its p95 is not measured");
  else if (!(duringP95 < 2 * idleP95)) failures.push(`search p95 during the add ${ms(duringP95)} ms is ${ratio(duringP95 / idleP95)} its idle p95 ${ms(idleP95)} ms (target < 2×)`);

  const trips = (samples: number[]) => (samples.length > 0 ? String(median(samples)) : "n/a");
  const addedNote = add.matching > MAX_ADD ? `the first ${count(MAX_ADD)} of ${count(add.matching)} matching traces` : `all ${count(add.matching)} traces of the run${add.matching < MAX_ADD ? ` (fewer than ${count(MAX_ADD)} at this size)` : ""}`;
  const table = markdownTable(
    ["measure", "figure", "target"],
    [
      ["rating PUT (like_dislike, a new rating on a trace): p50 / p95", `${ms(ratingP50)} / ${ms(percentile(writes.rating, 95))} ms (${writes.rating.length} requests, ${trips(writes.ratingRoundTrips)} D1 round trips)`, ""],
      ["one-span POST /spans (one small llm span under an existing trace): p50 / p95", `${ms(spanP50)} / ${ms(percentile(writes.span, 95))} ms (${writes.span.length} requests, ${trips(writes.spanRoundTrips)} D1 round trips)`, ""],
      ["rating p50 / span p50", ratio(ratingP50 / spanP50), "≤ 1.5×"],
      ["queue add by filter: records added; queue count afterwards", `${count(first.added)}; ${count(first.counted)} (${addedNote})`, `${count(add.expected)}; ${count(add.expected)}`],
      ["queue add by filter: time (the request; it adds everything before it answers)", `${(first.ms / 1000).toFixed(2)} s = ${count(first.added / (first.ms / 1000))} records/s (${first.roundTrips ?? "n/a"} D1 round trips)`, ""],
      ...(add.adds.length > 1
        ? [[`the same add repeated into new queues, for enough searches during adds: adds; median / max time`, `${add.adds.length}; ${(median(addTimes) / 1000).toFixed(2)} / ${(Math.max(...addTimes) / 1000).toFixed(2)} s`, ""]]
        : []),
      ["search (first page of spans) idle, just before: p50 / p95", `${ms(median(add.idle))} / ${ms(idleP95)} ms (${add.idle.length} requests)`, ""],
      [
        "same search back to back during the add: p50 / p95 / max",
        `${ms(median(add.during))} / ${ms(duringP95)} / ${ms(Math.max(...add.during))} ms (${add.during.length} requests sent while ${add.adds.length > 1 ? `the ${add.adds.length} adds` : "the add"} ran)`,
        "",
      ],
      ["search p95 during / idle", ratio(duringP95 / idleP95), "< 2×"],
    ],
    ["l", "r", "l"],
  );
  const markdown = [
    "# Annotations benchmark (writes and queue adds)",
    "",
    runConditions(startLoad),
    `- dataset: ${count(options.size)} records, seed ${options.seed} (a private copy); the bench organization's one project, on the catalog database`,
    "- writes: rating PUT and one-span POST sent alternately, one at a time, each on the next trace of the run; 10 of each first as a warm-up",
    `- queue add: POST /v2/annotation_queues/{qid}/records, filter_tree \`created_at >= <window start>\`, record_type trace (matches every trace of the run); one client sends the search back to back meanwhile; an add with fewer than ${MIN_DURING} searches during it is repeated into new queues (at most ${MAX_ROUNDS} adds)`,
    "",
    table,
    "",
    failures.length === 0 ? "Every target met." : ["Targets missed:", "", ...failures.map((f) => `- ${f}`)].join("\n"),
    "",
  ].join("\n");
  return finishReport("annotations", markdown, options.quick);
}
