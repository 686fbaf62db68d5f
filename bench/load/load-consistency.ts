/**
 * The check after the load benchmark's phases: the deletion jobs finish, then each
 * organization's run is read back in full (every trace and span id, page by page) and compared
 * with what the benchmark was told: every acknowledged record present exactly once unless a
 * completed deletion job erased its group, nothing else present, and nothing of one
 * organization visible to the other (its project and run are a 404 to the other's key, and the
 * two id sets do not meet).
 */
import { timedJson } from "../lib/http-timing";
import { sleep } from "../lib/wrangler-dev";
import type { Org } from "./load-traffic";

export interface ConsistencyReport {
  ok: boolean;
  lines: string[];
}

/** Waits out a 429 (the abusive organization may still be over its request rate). */
async function politely<T>(send: () => ReturnType<typeof timedJson<T>>): ReturnType<typeof timedJson<T>> {
  for (;;) {
    const response = await send();
    if (response.status !== 429) return response;
    await sleep(1000);
  }
}

async function waitForJobs(org: Org): Promise<{ completed: Set<string>; pending: string[] }> {
  const completed = new Set<string>();
  const pending: string[] = [];
  for (const [group, jobId] of org.erased) {
    if (!jobId) {
      completed.add(group); // nothing matched when it was asked: nothing to erase
      continue;
    }
    const deadline = Date.now() + 300_000;
    for (;;) {
      const job = await politely(() => timedJson<{ status: string }>(`${org.baseUrl}/v2/org-jobs/${jobId}`, { headers: org.headers }));
      if (job.status === 200 && job.body.status === "completed") {
        completed.add(group);
        break;
      }
      if ((job.status === 200 && job.body.status === "failed") || Date.now() > deadline) {
        pending.push(`${group} (job ${jobId}: ${job.status === 200 ? job.body.status : `HTTP ${job.status}`})`);
        break;
      }
      await sleep(1000);
    }
  }
  return { completed, pending };
}

/** Every id of one family in the org's run, in the order the pages returned them (duplicates kept). */
async function allIds(org: Org, family: "traces" | "spans"): Promise<string[]> {
  const ids: string[] = [];
  for (let offset: number | null = 0; offset !== null; ) {
    const page = await politely(() =>
      timedJson<{ records: { id: string }[]; next_starting_token: number | null }>(`${org.baseUrl}/v2/projects/${org.tenant.projectId}/${family}/partial_search`, {
        headers: org.headers,
        body: { log_stream_id: org.tenant.logStreamId, sort: { column_id: "id", ascending: true }, pagination: { limit: 1000, starting_token: offset }, select_columns: { column_ids: ["id"] } },
      }),
    );
    if (page.status !== 200) throw new Error(`reading ${family} back: HTTP ${page.status} ${JSON.stringify(page.body).slice(0, 300)}`);
    ids.push(...page.body.records.map((r) => r.id));
    offset = page.body.next_starting_token;
  }
  return ids;
}

function compare(label: string, expected: Set<string>, present: string[]): { ok: boolean; line: string } {
  const seen = new Set<string>();
  let duplicates = 0;
  for (const id of present) {
    if (seen.has(id)) duplicates += 1;
    seen.add(id);
  }
  const missing = [...expected].filter((id) => !seen.has(id)).length;
  const unexpected = [...seen].filter((id) => !expected.has(id)).length;
  const ok = missing === 0 && unexpected === 0 && duplicates === 0;
  return { ok, line: `${label}: ${seen.size.toLocaleString("en-US")} present, ${expected.size.toLocaleString("en-US")} expected; missing ${missing}, unexpected ${unexpected}, duplicated ${duplicates}` };
}

async function checkOrg(org: Org, label: string): Promise<{ ok: boolean; lines: string[]; ids: Set<string> }> {
  const jobs = await waitForJobs(org);
  const expectedTraces = new Set<string>();
  const expectedSpans = new Set<string>();
  for (const trace of org.acknowledged) {
    if (jobs.completed.has(trace.group)) continue;
    expectedTraces.add(trace.trace);
    for (const span of trace.spans) expectedSpans.add(span);
  }
  const traces = compare(`${label} traces`, expectedTraces, await allIds(org, "traces"));
  const spans = compare(`${label} spans`, expectedSpans, await allIds(org, "spans"));
  const lines = [
    `${label}: ${org.acknowledged.length.toLocaleString("en-US")} traces acknowledged; ${org.erased.size} deletion jobs, ${jobs.completed.size} completed${jobs.pending.length ? `, not completed: ${jobs.pending.join(", ")}` : ""}`,
    traces.line,
    spans.line,
  ];
  return { ok: traces.ok && spans.ok && jobs.pending.length === 0, lines, ids: new Set([...expectedTraces, ...expectedSpans]) };
}

/** Another organization's project and run must be a 404, never an answer. */
async function isolated(from: Org, to: Org): Promise<{ ok: boolean; line: string }> {
  const project = await politely(() => timedJson(`${from.baseUrl}/v2/projects/${to.tenant.projectId}`, { headers: from.headers }));
  const search = await politely(() =>
    timedJson(`${from.baseUrl}/v2/projects/${to.tenant.projectId}/traces/partial_search`, { headers: from.headers, body: { log_stream_id: to.tenant.logStreamId } }),
  );
  const ownProjectOtherRun = await politely(() =>
    timedJson(`${from.baseUrl}/v2/projects/${from.tenant.projectId}/traces/partial_search`, { headers: from.headers, body: { log_stream_id: to.tenant.logStreamId } }),
  );
  const statuses = [project.status, search.status, ownProjectOtherRun.status];
  return { ok: statuses.every((s) => s === 404), line: `the other organization's project, its run, and its run under one's own project, with one's own key: ${statuses.join(", ")} (all 404 expected)` };
}

export async function checkConsistency(good: Org, bad: Org): Promise<ConsistencyReport> {
  // Let the abusive organization's request-rate window turn over before reading it back.
  await sleep(11_000);
  const goodCheck = await checkOrg(good, "well-behaved");
  const badCheck = await checkOrg(bad, "abusive");
  const towardsBad = await isolated(good, bad);
  const towardsGood = await isolated(bad, good);
  const shared = [...goodCheck.ids].filter((id) => badCheck.ids.has(id)).length;
  return {
    ok: goodCheck.ok && badCheck.ok && towardsBad.ok && towardsGood.ok && shared === 0,
    lines: [...goodCheck.lines, ...badCheck.lines, `well-behaved → abusive: ${towardsBad.line}`, `abusive → well-behaved: ${towardsGood.line}`, `ids shared by the two organizations: ${shared}`],
  };
}
