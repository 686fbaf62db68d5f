/** Everything about one trace or span: status and error, model and tokens, input, output, metadata, tags, metrics, scores. */
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { ApiRecord } from "../api/types";
import { formatDateTime, formatDurationMs, formatMetric } from "../format/values";
import { Highlighted } from "../text-search/highlighted";
import { ContentView } from "./content-view";
import { durationMs } from "./span-tree";

/** Units of well-known metrics; the table's columns give the rest (a metric column's data_unit). */
function metricUnit(name: string, units: ReadonlyMap<string, string>): string | undefined {
  return units.get(name) ?? (name.endsWith("_ns") ? "nano_seconds" : undefined);
}

const TOKEN_METRICS = ["num_input_tokens", "num_output_tokens", "num_total_tokens"] as const;

/** A scorer's result on the record (`metric_info.<name>` written by the evaluations: it has a `scorer_id`). */
export interface ScoreInfo {
  status_type: string;
  value?: number | string;
  label?: string;
  explanation?: string;
  message?: string;
  judge?: { model: string; num_input_tokens: number; num_output_tokens: number; cost: number | null };
  scorer_id: string;
  scorer_version?: number;
}

/** The record's scorer results by metric name (client metrics, without a scorer, are left to the metrics table). */
export function scoresOf(record: ApiRecord): [string, ScoreInfo][] {
  const info = record.metric_info;
  if (!info || typeof info !== "object") return [];
  return Object.entries(info as Record<string, unknown>).filter((entry): entry is [string, ScoreInfo] => {
    const v = entry[1] as Partial<ScoreInfo> | null;
    return typeof v === "object" && v !== null && typeof v.scorer_id === "string" && typeof v.status_type === "string";
  });
}

const STATUS_WORDS: Record<string, string> = { success: "scored", pending: "pending", error: "error", not_applicable: "not applicable" };

/** One score: its value (or label), its status when not scored, and what the scorer said (explanation, or why not). */
export function ScoreRow({ name, score }: { name: string; score: ScoreInfo }) {
  const value = score.label ?? (score.value === undefined ? null : typeof score.value === "number" ? formatMetric(score.value, null) : String(score.value));
  const said = score.explanation || score.message;
  return (
    <tr data-score={name} data-status={score.status_type}>
      <th scope="row">{name}</th>
      <td class="num">{value ?? "—"}</td>
      <td>
        <span class={`chip score-${score.status_type}`}>{STATUS_WORDS[score.status_type] ?? score.status_type}</span>
        {score.scorer_version ? <span class="muted small"> v{score.scorer_version}</span> : null}
      </td>
      <td class="score-explanation">
        {said ? <span>{said}</span> : null}
        {score.judge ? (
          <span class="muted small">
            {" "}
            ({score.judge.model}, {score.judge.num_input_tokens + score.judge.num_output_tokens} tokens{score.judge.cost !== null ? `, $${score.judge.cost.toFixed(6)}` : ""})
          </span>
        ) : null}
      </td>
    </tr>
  );
}

export function RecordDetail({ record, units, children }: { record: ApiRecord; units: ReadonlyMap<string, string>; children?: ComponentChildren }) {
  // Shadow-mode redaction (docs/redaction.md) stores masked copies beside the originals: the
  // redacted view is the default (the issue asks it for members; the page shows it to everyone
  // first, so an original is only ever on screen by choice), and a toggle shows the original.
  // The choice is for one record: the component stays mounted while the trace view moves between
  // spans, and the next record must open on its redacted view again.
  const hasRedacted = record.redacted_input != null || record.redacted_output != null;
  const [originalOf, setOriginalOf] = useState<unknown>(null);
  const showOriginal = originalOf !== null && originalOf === record.id;
  const redactedView = hasRedacted && !showOriginal;
  const input = redactedView && record.redacted_input != null ? record.redacted_input : record.input;
  const output = redactedView && record.redacted_output != null ? record.redacted_output : record.output;
  const metrics = (record.metrics as Record<string, unknown> | undefined) ?? {};
  const scores = scoresOf(record);
  const metadata = Object.entries((record.user_metadata as Record<string, string> | undefined) ?? {});
  const tags = (record.tags as string[] | undefined) ?? [];
  const duration = durationMs(record);
  const status = typeof record.status_code === "number" ? record.status_code : null;
  const facts: [string, string][] = [];
  if (duration !== null) facts.push(["Duration", formatDurationMs(duration)]);
  facts.push(["Started", formatDateTime(record.created_at)]);
  if (status !== null) facts.push(["Status", String(status)]);
  for (const key of ["model", "temperature", "finish_reason", "agent_type", "tool_call_id"] as const) {
    if (record[key] !== null && record[key] !== undefined) facts.push([key.replace(/_/g, " "), String(record[key])]);
  }
  for (const key of TOKEN_METRICS) {
    if (typeof metrics[key] === "number") facts.push([key.replace("num_", "").replace(/_/g, " "), String(metrics[key])]);
  }
  return (
    <article class="record-detail" aria-label={`${record.type} ${String(record.name ?? "")}`} data-testid="record-detail">
      <header>
        <span class={`kind kind-${record.type}`}>{record.type}</span>
        <h3>
          <Highlighted text={String(record.name ?? "(unnamed)")} />
        </h3>
        <span class="muted mono small">{record.id}</span>
      </header>
      {record.error_message ? (
        <div class="notice notice-error" data-testid="record-error">
          <strong>Error{status !== null ? ` (${status})` : ""}</strong>
          <span>{String(record.error_message)}</span>
        </div>
      ) : null}
      <dl class="facts">
        {facts.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      {hasRedacted ? (
        <label class="inline-check redacted-toggle" data-testid="redacted-toggle">
          <input type="checkbox" checked={!showOriginal} onChange={(e) => setOriginalOf(e.currentTarget.checked ? null : record.id)} /> Redacted view (personal data masked)
        </label>
      ) : null}
      <section>
        <h4>Input{redactedView && record.redacted_input != null ? " (redacted)" : ""}</h4>
        <ContentView value={input} />
      </section>
      <section>
        <h4>Output{redactedView && record.redacted_output != null ? " (redacted)" : ""}</h4>
        <ContentView value={output} />
      </section>
      {tags.length > 0 ? (
        <section>
          <h4>Tags</h4>
          {tags.map((t) => (
            <span key={t} class="chip">
              {t}
            </span>
          ))}
        </section>
      ) : null}
      {metadata.length > 0 ? (
        <section>
          <h4>Metadata</h4>
          <table class="kv">
            <tbody>
              {metadata.map(([k, v]) => (
                <tr key={k}>
                  <th scope="row">{k}</th>
                  <td>{v}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ) : null}
      {Object.keys(metrics).length > 0 ? (
        <section>
          <h4>Metrics</h4>
          <table class="kv" data-testid="record-metrics">
            <tbody>
              {Object.entries(metrics).map(([k, v]) => (
                <tr key={k}>
                  <th scope="row">{k}</th>
                  <td class="num">{formatMetric(v, metricUnit(k, units))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ) : null}
      {scores.length > 0 ? (
        <section>
          <h4>Scores</h4>
          <table class="kv scores" data-testid="record-scores">
            <tbody>
              {scores.map(([name, score]) => (
                <ScoreRow key={name} name={name} score={score} />
              ))}
            </tbody>
          </table>
        </section>
      ) : null}
      {children}
    </article>
  );
}
