/**
 * The traffic of the load benchmark: what the well-behaved organization does (a steady mix of
 * ingestion, indexed and scan searches, lookups, dry runs and deletion jobs, with think time),
 * what the abusive one does (scan-class searches, password guessing and a request flood, back to
 * back, ignoring Retry-After), and the records both send, with the bookkeeping the consistency
 * check needs (which ids were acknowledged, which erasure group each trace belongs to).
 */
import { performance } from "node:perf_hooks";
import type { BenchTenant } from "../dataset/bench-tenant";
import { type TimedResponse, timedJson } from "../lib/http-timing";
import type { SeededRandom } from "../lib/seeded-random";

/** Spans per trace: one workflow with an llm, a tool and a retriever under it. */
export const RECORDS_PER_TRACE = 4;

/** A word that only a few inputs hold: a substring search for it reads the whole run. */
export const RARE_WORD = "zebrafish-quokka";

/** Uniform integer in [0, n). */
const below = (r: SeededRandom, n: number) => r.int(0, n - 1);

const WORDS = ["weather", "invoice", "refund", "shipping", "password", "latency", "upgrade", "billing", "schema", "answer", "question", "retry"];

export interface TraceIds {
  trace: string;
  spans: string[];
  /** The value of `user_metadata.erase`: a deletion job erases a whole group. */
  group: string;
}

function sentence(r: SeededRandom, words: number): string {
  return Array.from({ length: words }, () => WORDS[below(r, WORDS.length)]!).join(" ");
}

/** The erasure group of the index-th trace. */
export type Grouping = (index: number) => string;

/** One trace with its spans, and its ids. About 1.2 KB of JSON. */
export function traceOf(r: SeededRandom, index: number, groupOf: Grouping): { body: Record<string, unknown>; ids: TraceIds } {
  const trace = crypto.randomUUID();
  const workflow = crypto.randomUUID();
  const llm = crypto.randomUUID();
  const tool = crypto.randomUUID();
  const group = groupOf(index);
  const input = `${sentence(r, 12)}${index % 997 === 0 ? ` ${RARE_WORD}` : ""}`;
  const metadata = { customer: `customer-${below(r, 200)}`, erase: group };
  const body = {
    id: trace,
    name: `trace-${index}`,
    input,
    output: sentence(r, 10),
    tags: [WORDS[below(r, WORDS.length)]!],
    user_metadata: metadata,
    metrics: { toxicity: below(r, 100) / 100 },
    spans: [
      {
        id: workflow,
        type: "workflow",
        name: "pipeline",
        input,
        user_metadata: metadata,
        spans: [
          { id: llm, type: "llm", name: "chat", model: "gpt-4o-mini", input: [{ role: "user", content: input }], output: { role: "assistant", content: sentence(r, 8) }, metrics: { num_input_tokens: 12 } },
          { id: tool, type: "tool", name: "lookup", input: sentence(r, 4), output: sentence(r, 4) },
        ],
      },
    ],
  };
  return { body, ids: { trace, spans: [workflow, llm, tool], group } };
}

/** Per operation: the latency of each answer and how many of each status. */
export class Tally {
  readonly latencies = new Map<string, number[]>();
  readonly statuses = new Map<string, Map<number, number>>();

  add(operation: string, response: TimedResponse): void {
    const byStatus = this.statuses.get(operation) ?? new Map<number, number>();
    byStatus.set(response.status, (byStatus.get(response.status) ?? 0) + 1);
    this.statuses.set(operation, byStatus);
    if (response.status < 300) {
      const list = this.latencies.get(operation) ?? [];
      list.push(response.ms);
      this.latencies.set(operation, list);
    }
  }

  count(predicate: (status: number) => boolean, operation?: string): number {
    let total = 0;
    for (const [name, byStatus] of this.statuses) {
      if (operation !== undefined && name !== operation) continue;
      for (const [status, n] of byStatus) if (predicate(status)) total += n;
    }
    return total;
  }
}

export interface Org {
  tenant: BenchTenant;
  baseUrl: string;
  headers: Record<string, string>;
  /** Every trace acknowledged by a 200, with its spans. */
  acknowledged: TraceIds[];
  /** Groups a deletion job was started for (and their job ids). */
  erased: Map<string, string>;
}

export function orgOf(tenant: BenchTenant, baseUrl: string): Org {
  return { tenant, baseUrl, headers: { "Service-API-Key": tenant.apiKey }, acknowledged: [], erased: new Map() };
}

const url = (org: Org, path: string) => `${org.baseUrl}${path}`;

/** Ingests `traces` traces in requests of `perRequest`, recording what was acknowledged. */
export async function ingest(org: Org, r: SeededRandom, first: number, traces: number, perRequest: number, groupOf: Grouping, tally?: Tally): Promise<void> {
  for (let start = first; start < first + traces; start += perRequest) {
    const made = Array.from({ length: Math.min(perRequest, first + traces - start) }, (_, i) => traceOf(r, start + i, groupOf));
    const response = await timedJson(url(org, `/v2/projects/${org.tenant.projectId}/traces`), {
      headers: org.headers,
      body: { log_stream_id: org.tenant.logStreamId, traces: made.map((m) => m.body) },
    });
    tally?.add("ingest", response);
    if (response.status === 200) org.acknowledged.push(...made.map((m) => m.ids));
    else if (!tally) throw new Error(`setup ingest: HTTP ${response.status} ${JSON.stringify(response.body).slice(0, 300)}`);
  }
}

function search(org: Org, family: string, body: Record<string, unknown>) {
  return timedJson(url(org, `/v2/projects/${org.tenant.projectId}/${family}/partial_search`), {
    headers: org.headers,
    body: { log_stream_id: org.tenant.logStreamId, select_columns: { column_ids: ["name", "created_at"] }, ...body },
  });
}

/** The indexed searches of a dashboard: newest first, by kind and model, by customer, by toxicity. */
const INDEXED_SEARCHES: [string, (r: SeededRandom) => Record<string, unknown>][] = [
  ["traces", () => ({ limit: 50 })],
  ["spans", () => ({ limit: 50, filters: [{ type: "text", column_id: "type", operator: "eq", value: "llm" }] })],
  ["traces", (r) => ({ limit: 50, filters: [{ type: "text", column_id: "user_metadata.customer", operator: "eq", value: `customer-${below(r, 200)}` }] })],
  ["spans", () => ({ limit: 50, sort: { column_id: "metrics/num_input_tokens", ascending: false } })],
];

/** Scan-class searches: a substring over every input, unindexed sorts, a deep page. */
const SCAN_SEARCHES: [string, () => Record<string, unknown>][] = [
  ["spans", () => ({ limit: 50, filters: [{ type: "text", column_id: "input", operator: "contains", value: RARE_WORD }] })],
  ["traces", () => ({ limit: 50, sort: { column_id: "name", ascending: true } })],
  ["spans", () => ({ limit: 50, filters: [{ type: "text", column_id: "output", operator: "contains", value: "Refund", case_sensitive: false }] })],
  ["spans", () => ({ limit: 50, starting_token: 60_000 })],
];

export interface RunWindow {
  until: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Traces ingested while the phases run: a group no deletion job erases, so no job races them. */
export const LIVE_GROUP: Grouping = () => "live";

/**
 * One well-behaved client: a weighted mix of operations with `thinkMs` between them, until the
 * window closes. Deletion jobs erase one of the `groups` setup groups that nobody erased yet.
 */
export async function wellBehavedClient(org: Org, r: SeededRandom, window: RunWindow, tally: Tally, options: { thinkMs: number; nextTrace: () => number; groups: number }): Promise<void> {
  while (performance.now() < window.until) {
    const pick = below(r, 100);
    if (pick < 45) {
      const [family, body] = INDEXED_SEARCHES[below(r, INDEXED_SEARCHES.length)]!;
      tally.add("search (indexed)", await search(org, family, body(r)));
    } else if (pick < 50) {
      const [family, body] = SCAN_SEARCHES[below(r, SCAN_SEARCHES.length)]!;
      tally.add("search (scan)", await search(org, family, body()));
    } else if (pick < 70) {
      const first = options.nextTrace();
      await ingest(org, r, first, 10, 10, LIVE_GROUP, tally);
    } else if (pick < 82) {
      // A trace that no deletion job was asked to erase (those may be gone: a 404 by design).
      const known = org.acknowledged[below(r, Math.max(1, org.acknowledged.length))];
      if (known && !org.erased.has(known.group)) {
        tally.add("lookup", await timedJson(url(org, `/v2/projects/${org.tenant.projectId}/traces/${known.trace}`), { headers: org.headers }));
      }
    } else if (pick < 97) {
      const response = await timedJson(url(org, "/v2/org-jobs/delete-by-metadata?dry_run=true"), {
        headers: org.headers,
        body: { metadata_key: "customer", metadata_value: `customer-${below(r, 200)}` },
      });
      tally.add("dry run", response);
    } else {
      // A deletion job for a group nobody erased yet.
      const group = `group-${below(r, options.groups)}`;
      if (!org.erased.has(group)) {
        org.erased.set(group, "");
        const response = await timedJson<{ job_id: string | null }>(url(org, "/v2/org-jobs/delete-by-metadata"), {
          headers: org.headers,
          body: { metadata_key: "erase", metadata_value: group },
          repeatable: false,
        });
        tally.add("deletion job", response);
        if (response.status === 200) org.erased.set(group, response.body.job_id ?? "");
        else org.erased.delete(group);
      }
    }
    await sleep(options.thinkMs);
  }
}

/**
 * Each abusive client sends one request every ABUSIVE_INTERVAL_MS (25 per second), whatever the
 * answers say (429s and Retry-After ignored): a fixed pace, so that the abuse is the same however
 * fast the service refuses it. (A client that sends its next request the moment the last is
 * refused sends more the cheaper refusals get, and locally, where one isolate on one thread
 * serves everybody, takes its share of that thread whatever the limits: a deployed worker
 * spreads such a client over many isolates, and only the database is shared.)
 */
export const ABUSIVE_INTERVAL_MS = 40;

/** Waits for the client's next slot (no catching up after a slow answer). */
function pacer(): () => Promise<void> {
  let slot = performance.now();
  return async () => {
    const wait = slot - performance.now();
    if (wait > 0) await sleep(wait);
    slot = Math.max(slot, performance.now()) + ABUSIVE_INTERVAL_MS;
  };
}

/** Scan-class searches, at the abusive pace. */
export async function scanAbuser(org: Org, r: SeededRandom, window: RunWindow, tally: Tally): Promise<void> {
  const pace = pacer();
  while ((await pace(), performance.now() < window.until)) {
    const [family, body] = SCAN_SEARCHES[below(r, SCAN_SEARCHES.length)]!;
    tally.add("abusive scan", await search(org, family, body()));
  }
}

/** Password guessing against real and invented emails, from one address, at the abusive pace. */
export async function passwordGuesser(org: Org, victims: string[], r: SeededRandom, window: RunWindow, tally: Tally): Promise<void> {
  const pace = pacer();
  while ((await pace(), performance.now() < window.until)) {
    const email = below(r, 3) === 0 ? `guess-${below(r, 1_000_000)}@example.com` : victims[below(r, victims.length)]!;
    const response = await timedJson(url(org, "/login"), {
      headers: { "CF-Connecting-IP": "198.51.100.66" },
      body: { username: email, password: `Winter${below(r, 10_000)}!` },
    });
    tally.add("password guess", response);
  }
}

/** Cheap requests at the abusive pace: with the scans, more than the organization's request rate allows. */
export async function flooder(org: Org, window: RunWindow, tally: Tally): Promise<void> {
  const pace = pacer();
  while ((await pace(), performance.now() < window.until)) {
    tally.add("flood", await timedJson(url(org, "/v2/projects"), { headers: org.headers }));
  }
}
