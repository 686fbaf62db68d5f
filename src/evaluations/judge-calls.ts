/**
 * LLM judges (contract section 15, "Judges"): chat completions over the integration's
 * OpenAI-compatible endpoint with a JSON answer (`response_format` json_schema of
 * `{score | label, explanation}`), `num_judges` calls averaged (or the majority label, ties to the
 * first listed category). Every (record, scorer) is first stored `pending` with its reason, so
 * nothing waits without saying why. Then, per call:
 * - the scorer's daily budget (scorer_daily_calls, a conditional increment): past it the record
 *   stays pending ("daily budget reached") and a delayed message picks it up after midnight UTC;
 * - the integration's requests per minute over any 60 s (judge_minute_calls, a conditional
 *   increment over 10-second slots, shared by every isolate: takePace): past it the record stays
 *   pending and is retried when the oldest slot leaves the window;
 * - its concurrency: at most max_concurrency calls in flight per consumer invocation;
 * - a 429, a 5xx, a timeout or a network error is retried by a delayed message after the
 *   answer's Retry-After (up to 1 hour) or the backoff (JUDGE_RETRY_DELAYS_SECONDS); the fifth
 *   failure, or any other error, leaves `error` with the reason.
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { priceBookFor } from "../pricing/price-overrides";
import { callCost } from "../pricing/price-lookup";
import { unsealKey } from "./judge-keys";
import { resultStatements, type ScoreOutcome } from "./result-writes";
import { metadataOf, fieldText, type ScorableRecord } from "./scorable-record";
import type { ActiveScorer, ChunkTally, ScoringContext } from "./score-records";
import type { LlmDefinition } from "./scorer-store";

export const MAX_JUDGE_ATTEMPTS = 5;
export const JUDGE_TIMEOUT_MS = 60_000;
const MAX_RETRY_AFTER_S = 3600;
const DAY_MICROS = 86_400_000_000;

interface Integration {
  name: string;
  endpoint: string;
  api_key_header: string;
  key_sealed: string;
  max_concurrency: number;
  requests_per_minute: number;
}

/** `{input}`, `{output}`, `{metadata.KEY}`, `{name}`, `{model}` replaced; other braces left as written. */
export function renderPrompt(template: string, record: ScorableRecord): string {
  const metadata = metadataOf(record);
  return template.replace(/\{(input|output|name|model|metadata\.[^{}]{1,200})\}/g, (_, key: string) => {
    if (key === "input" || key === "output") return fieldText(record, key) ?? "";
    if (key === "name") return record.name;
    if (key === "model") return record.model ?? "";
    const value = metadata[key.slice("metadata.".length)];
    return value === undefined || value === null ? "" : String(value);
  });
}

function answerSchema(llm: LlmDefinition) {
  const score =
    llm.output_type === "categorical"
      ? { label: { type: "string", enum: llm.categories ?? [] } }
      : llm.output_type === "boolean"
        ? { score: { type: "boolean" } }
        : llm.output_type === "percentage"
          ? { score: { type: "number", minimum: 0, maximum: 1 } }
          : { score: { type: "number" } };
  return { type: "object", properties: { ...score, explanation: { type: "string" } }, required: [...Object.keys(score), "explanation"], additionalProperties: false };
}

function systemPrompt(llm: LlmDefinition): string {
  const what =
    llm.output_type === "categorical"
      ? `"label": one of ${JSON.stringify(llm.categories)}`
      : llm.output_type === "boolean"
        ? '"score": true or false'
        : llm.output_type === "percentage"
          ? '"score": a number from 0 to 1'
          : '"score": a number';
  return `${llm.instructions}\n\nAnswer with a JSON object only: {${what}, "explanation": ${llm.cot_enabled ? "your step-by-step reasoning, then the conclusion" : "one or two sentences"}}.`.trim();
}

type CallResult =
  | { ok: true; value: number | string; explanation: string; inputTokens: number; outputTokens: number }
  | { ok: false; retryable: boolean; retryAfterS: number | null; message: string };

function retryAfterSeconds(header: string | null): number | null {
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(MAX_RETRY_AFTER_S, Math.ceil(seconds));
  const at = Date.parse(header);
  return Number.isFinite(at) ? Math.min(MAX_RETRY_AFTER_S, Math.max(0, Math.ceil((at - Date.now()) / 1000))) : null;
}

/** The header's value: `Authorization` gets `Bearer ` unless the key has a scheme already. */
export function keyHeaderValue(header: string, key: string): string {
  return header.toLowerCase() === "authorization" && !/^[A-Za-z][A-Za-z0-9-]*\s/.test(key) ? `Bearer ${key}` : key;
}

async function callJudge(integration: Integration, key: string, llm: LlmDefinition, prompt: string): Promise<CallResult> {
  let response: Response;
  try {
    response = await fetch(`${integration.endpoint}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", [integration.api_key_header]: keyHeaderValue(integration.api_key_header, key) },
      body: JSON.stringify({
        model: llm.model_name,
        messages: [
          { role: "system", content: systemPrompt(llm) },
          { role: "user", content: prompt },
        ],
        response_format: { type: "json_schema", json_schema: { name: "judgement", strict: true, schema: answerSchema(llm) } },
      }),
      signal: AbortSignal.timeout(JUDGE_TIMEOUT_MS),
    });
  } catch (error) {
    return { ok: false, retryable: true, retryAfterS: null, message: `the judge endpoint could not be reached (${error instanceof Error ? error.name : "error"})` };
  }
  const text = await response.text().catch(() => "");
  if (response.status === 429 || response.status >= 500) {
    return { ok: false, retryable: true, retryAfterS: retryAfterSeconds(response.headers.get("retry-after")), message: `the judge endpoint answered ${response.status}` };
  }
  if (!response.ok) return { ok: false, retryable: false, retryAfterS: null, message: `the judge endpoint answered ${response.status}: ${text.slice(0, 200)}` };
  try {
    const body = JSON.parse(text) as { choices?: { message?: { content?: string } }[]; usage?: { prompt_tokens?: number; completion_tokens?: number } };
    const content = body.choices?.[0]?.message?.content ?? "";
    const answer = JSON.parse(content.replace(/^```(?:json)?\s*|\s*```$/g, "")) as { score?: unknown; label?: unknown; explanation?: unknown };
    const explanation = typeof answer.explanation === "string" ? answer.explanation : "";
    let value: number | string;
    if (llm.output_type === "categorical") {
      if (typeof answer.label !== "string" || !(llm.categories ?? []).includes(answer.label)) throw new Error(`label ${JSON.stringify(answer.label)} is not one of the categories`);
      value = answer.label;
    } else if (typeof answer.score === "boolean") value = answer.score ? 1 : 0;
    else if (typeof answer.score === "number" && Number.isFinite(answer.score)) value = answer.score;
    else throw new Error("the answer has no numeric score");
    return { ok: true, value, explanation, inputTokens: body.usage?.prompt_tokens ?? 0, outputTokens: body.usage?.completion_tokens ?? 0 };
  } catch (error) {
    return { ok: false, retryable: false, retryAfterS: null, message: `the judge's answer could not be read (${error instanceof Error ? error.message : String(error)})` };
  }
}

/** Takes `n` calls from a counter if they fit under `limit`; false when they do not. */
async function take(db: D1Database, sql: string, params: unknown[]): Promise<boolean> {
  const row = await db.prepare(sql).bind(...params).first();
  return row !== null;
}

const TAKE_BUDGET = `INSERT INTO scorer_daily_calls (scorer_id, day, calls) SELECT ?1, ?2, ?3 WHERE ?3 <= ?4
ON CONFLICT (scorer_id, day) DO UPDATE SET calls = calls + excluded.calls WHERE scorer_daily_calls.calls + excluded.calls <= ?4 RETURNING calls`;
/**
 * The integration's pace (requests per minute) over any 60 s, not per UTC minute: counted per
 * 10-second slot (the table's `minute` column holds the slot number, Date.now() / 10 s), a call
 * taken only if the calls of its slot and the 6 before it (70 s) plus its own stay within the
 * limit. Any 60 s window lies within 7 consecutive slots, so no window ever holds more than the
 * limit; per UTC minute, the end of one minute and the start of the next could hold twice it.
 * The cost: a steady stream gets at least 6/7 of the limit. One statement: atomic in D1.
 */
export const PACE_SLOT_MS = 10_000;
export const PACE_SLOTS = 7;
const TAKE_PACE = `INSERT INTO judge_minute_calls (organization_id, integration, minute, calls)
SELECT ?1, ?2, ?3, ?4 WHERE (SELECT coalesce(sum(calls), 0) FROM judge_minute_calls WHERE organization_id = ?1 AND integration = ?2 AND minute BETWEEN ?3 - ${PACE_SLOTS - 1} AND ?3) + ?4 <= ?5
ON CONFLICT (organization_id, integration, minute) DO UPDATE SET calls = calls + excluded.calls
WHERE (SELECT coalesce(sum(calls), 0) FROM judge_minute_calls WHERE organization_id = ?1 AND integration = ?2 AND minute BETWEEN ?3 - ${PACE_SLOTS - 1} AND ?3) + excluded.calls <= ?5 RETURNING calls`;

/** Takes `calls` from the integration's pace at `nowMs`; false when they do not fit in the last 70 s. */
export async function takePace(db: D1Database, organizationId: string, integration: string, nowMs: number, calls: number, limit: number): Promise<boolean> {
  return take(db, TAKE_PACE, [organizationId, integration, Math.floor(nowMs / PACE_SLOT_MS), calls, limit]);
}

/** Seconds until the pace's oldest counted slot leaves the window (a few seconds of jitter added by the caller). */
const paceWait = (nowMs: number) => (Math.floor(nowMs / PACE_SLOT_MS) + 1) * (PACE_SLOT_MS / 1000) - nowMs / 1000;

function retryDelays(env: Env): number[] {
  const parsed = (env.JUDGE_RETRY_DELAYS_SECONDS ?? "5,30,120,300").split(",").map(Number).filter((n) => Number.isFinite(n) && n >= 0);
  return parsed.length > 0 ? parsed : [5, 30, 120, 300];
}

/** Runs `work` over the items, at most `limit` at a time. */
async function pooled<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

type Answer = Extract<CallResult, { ok: true }>;

/** `num_judges` answers as one result: the mean (or the majority label, ties to the first listed), tokens summed, their cost. */
function aggregateAnswers(llm: LlmDefinition, answers: Answer[], prices: Awaited<ReturnType<typeof priceBookFor>>) {
  const inputTokens = answers.reduce((s, a) => s + a.inputTokens, 0);
  const outputTokens = answers.reduce((s, a) => s + a.outputTokens, 0);
  const price = prices(llm.model_name);
  const judge = { model: llm.model_name, num_input_tokens: inputTokens, num_output_tokens: outputTokens, cost: price ? callCost(price, inputTokens, outputTokens) : null };
  let value: number;
  let label: string | undefined;
  if (llm.output_type === "categorical") {
    const categories = llm.categories ?? [];
    const votes = categories.map((c) => answers.filter((a) => a.value === c).length);
    const best = votes.indexOf(Math.max(...votes));
    value = best;
    label = categories[best];
  } else value = answers.reduce((s, a) => s + (a.value as number), 0) / answers.length;
  const explanation = answers.map((a) => a.explanation).filter((e) => e).join("\n\n");
  return { value, label, explanation, judge };
}

/**
 * One judgement of one record, stored nowhere (a scorer's test on a chosen record): paced like
 * any call (never past the integration's requests per minute), not counted in the daily budget,
 * not retried. `metric_info`'s shape, or `{retryAfterS}` when the pace allows no call now.
 */
export async function judgeOnce(env: Env, organizationId: string, llm: LlmDefinition, record: ScorableRecord): Promise<Record<string, unknown> | { retryAfterS: number }> {
  const integration = await env.DB.prepare("SELECT name, endpoint, api_key_header, key_sealed, max_concurrency, requests_per_minute FROM judge_integrations WHERE organization_id = ?1 AND name = ?2").bind(organizationId, llm.integration).first<Integration>();
  if (!integration) return { status_type: "error", message: `no "${llm.integration}" judge integration: an admin sets one with PUT /v2/integrations/${llm.integration}` };
  const now = Date.now();
  if (!(await takePace(env.DB, organizationId, integration.name, now, llm.num_judges, integration.requests_per_minute))) return { retryAfterS: Math.max(1, Math.ceil(paceWait(now))) };
  const key = await unsealKey(env, integration.key_sealed);
  const prompt = renderPrompt(llm.user_prompt, record);
  const answers: Answer[] = [];
  for (let i = 0; i < llm.num_judges; i++) {
    const result = await callJudge(integration, key, llm, prompt);
    if (!result.ok) return { status_type: "error", message: result.message };
    answers.push(result);
  }
  const { value, label, explanation, judge } = aggregateAnswers(llm, answers, await priceBookFor(env.DB, organizationId));
  return { status_type: "success", value: label ?? value, ...(label !== undefined ? { label } : {}), explanation, judge };
}

/** Judges the (record, scorer) pairs; see the header. */
export async function judgeRecords(ctx: ScoringContext, db: D1Database, work: { scorer: ActiveScorer; record: ScorableRecord }[]): Promise<ChunkTally> {
  const env = ctx.env;
  const tally: ChunkTally = { scored: 0, skipped: 0, errors: 0 };
  // Pairs already final for this version are not judged again (a redelivery pays no call).
  const existing = await db
    .prepare("SELECT record_id, scorer_id, version_id, status, attempts FROM evaluation_results WHERE project_id = ?1 AND record_id IN (SELECT value FROM json_each(?2))")
    .bind(ctx.projectId, JSON.stringify([...new Set(work.map((w) => w.record.id))]))
    .all<{ record_id: string; scorer_id: string; version_id: string; status: string; attempts: number }>();
  const stored = new Map(existing.results.map((r) => [`${r.record_id}\u0000${r.scorer_id}`, r]));
  const todo = work.filter(({ scorer, record }) => {
    const row = stored.get(`${record.id}\u0000${scorer.id}`);
    if (!row) return true;
    if (row.status === "success" || row.status === "error") return ctx.backfill === true && row.version_id !== scorer.versionId;
    return true;
  });
  if (todo.length === 0) return tally;
  const integrations = new Map(
    (await env.DB.prepare("SELECT name, endpoint, api_key_header, key_sealed, max_concurrency, requests_per_minute FROM judge_integrations WHERE organization_id = ?1").bind(ctx.organizationId).all<Integration>()).results.map((i) => [i.name, i]),
  );
  const prices = await priceBookFor(env.DB, ctx.organizationId);
  const outcomes: ScoreOutcome[] = [];
  const retry = new Map<number, Set<string>>();
  const later = (seconds: number, recordId: string) => {
    const s = Math.max(1, Math.min(43_200, Math.ceil(seconds)));
    const set = retry.get(s) ?? new Set<string>();
    set.add(recordId);
    retry.set(s, set);
  };
  const outcome = (scorer: ActiveScorer, record: ScorableRecord, status: ScoreOutcome["status"], value: number | null, info: Record<string, unknown>, reason: string | null): ScoreOutcome => ({
    recordId: record.id, recordType: record.record_type, scorerId: scorer.id, scorerName: scorer.name, versionId: scorer.versionId, runId: record.run_id, status, value,
    info: { status_type: status, ...info, scorer_id: scorer.id, scorer_version: scorer.version }, reason,
  });
  /** Pending with its reason, due again in `seconds`: a delayed message then, else the cron's sweep (due-results.ts). */
  const pending = (scorer: ActiveScorer, record: ScorableRecord, message: string, seconds: number) => {
    outcomes.push({ ...outcome(scorer, record, "pending", null, { message }, message), dueAt: nowMicros() + Math.ceil(seconds * 1e6) });
    later(seconds, record.id);
  };
  const failed = (scorer: ActiveScorer, record: ScorableRecord, message: string) => {
    tally.errors++;
    outcomes.push(outcome(scorer, record, "error", null, { message }, message));
  };
  const byIntegration = new Map<string, typeof todo>();
  for (const item of todo) {
    const llm = (item.scorer.definition as { llm: LlmDefinition }).llm;
    const list = byIntegration.get(llm.integration) ?? [];
    list.push(item);
    byIntegration.set(llm.integration, list);
  }
  const day = Math.floor(nowMicros() / DAY_MICROS);
  const toMidnight = (day + 1) * 86_400 - Date.now() / 1000;
  for (const [name, items] of byIntegration) {
    const integration = integrations.get(name);
    if (!integration) {
      for (const { scorer, record } of items) failed(scorer, record, `no "${name}" judge integration: an admin sets one with PUT /v2/integrations/${name}`);
      continue;
    }
    let key: string;
    try {
      key = await unsealKey(env, integration.key_sealed);
    } catch (error) {
      for (const { scorer, record } of items) failed(scorer, record, error instanceof Error ? error.message : String(error));
      continue;
    }
    await pooled(items, integration.max_concurrency, async ({ scorer, record }) => {
      const llm = (scorer.definition as { llm: LlmDefinition }).llm;
      const calls = llm.num_judges;
      if (!(await take(env.DB, TAKE_BUDGET, [scorer.id, day, calls, scorer.dailyBudget]))) {
        pending(scorer, record, `the scorer's daily budget of ${scorer.dailyBudget} judge calls is spent; scored after midnight UTC`, toMidnight + 5);
        return;
      }
      const now = Date.now();
      if (!(await takePace(env.DB, ctx.organizationId, name, now, calls, integration.requests_per_minute))) {
        pending(scorer, record, `waiting for the "${name}" integration's pace of ${integration.requests_per_minute} requests per minute`, paceWait(now) + Math.random() * 5);
        return;
      }
      const prompt = renderPrompt(llm.user_prompt, record);
      const answers: Answer[] = [];
      for (let i = 0; i < calls; i++) {
        const result = await callJudge(integration, key, llm, prompt);
        if (!result.ok) {
          const attempts = (stored.get(`${record.id}\u0000${scorer.id}`)?.attempts ?? 0) + 1;
          if (result.retryable && attempts < MAX_JUDGE_ATTEMPTS) {
            const delays = retryDelays(env);
            const wait = result.retryAfterS ?? delays[Math.min(attempts - 1, delays.length - 1)]!;
            pending(scorer, record, `${result.message}; attempt ${attempts} of ${MAX_JUDGE_ATTEMPTS}, retried in ${wait} s`, wait);
          } else failed(scorer, record, result.retryable ? `${result.message}; gave up after ${attempts} attempts` : result.message);
          return;
        }
        answers.push(result);
      }
      const { value, label, explanation, judge } = aggregateAnswers(llm, answers, prices);
      outcomes.push(outcome(scorer, record, "success", value, { value: label ?? value, ...(label !== undefined ? { label } : {}), explanation, judge }, null));
    });
  }
  if (outcomes.length > 0) await db.batch(resultStatements(db, ctx.projectId, outcomes, nowMicros(), { backfill: ctx.backfill }));
  for (const [seconds, ids] of retry) {
    await env.EVALUATION_QUEUE.send({ kind: "score", organizationId: ctx.organizationId, projectId: ctx.projectId, runId: work[0]!.record.run_id, recordIds: [...ids] }, { delaySeconds: seconds });
  }
  return tally;
}
