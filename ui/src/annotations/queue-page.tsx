/**
 * Walking an annotation queue: its records one at a time in the order they were added, the
 * queue's templates beside each, and the caller's progress. The record's position is in the URL
 * (`?at=n`, 1-based), so a reload or a shared link lands on the same record.
 *
 * Keys (when no text field has the focus): → or n next, ← or p previous; l like and d dislike
 * (the active thumbs template), 1-5 stars (the active star template). The active template is the
 * one last clicked or focused, else the first of each type.
 */
import { useEffect, useState } from "preact/hooks";
import type { ApiRecord } from "../api/types";
import { formatDateTime } from "../format/values";
import { Link, navigate } from "../routing/navigation";
import { hrefOf } from "../routing/routes";
import { ContentView } from "../trace/content-view";
import { ErrorNotice } from "../views/error-notice";
import { useApi } from "../views/use-api";
import { currentUser, deleteQueueRating, getQueue, putQueueRating, queueRecordAt, ratingBody } from "./annotation-api";
import type { AnnotationTemplate, RatingValue, RecordFeedback } from "./annotation-types";
import { TemplateRatings } from "./ratings-panel";
import { ratingErrorText } from "./rating-input";
import "./annotations.css";

const NEXT_KEYS = new Set(["ArrowRight", "n"]);
const PREVIOUS_KEYS = new Set(["ArrowLeft", "p"]);
const THUMB_KEYS: Record<string, boolean> = { l: true, d: false };
const STAR_KEYS = new Set(["1", "2", "3", "4", "5"]);

/** The template a key rates with: the active one when it has the key's type, else the first that has. */
function keyTarget(templates: readonly AnnotationTemplate[], activeId: string | null, type: "like_dislike" | "star"): AnnotationTemplate | undefined {
  const active = templates.find((t) => t.id === activeId);
  return active?.constraints.annotation_type === type ? active : templates.find((t) => t.constraints.annotation_type === type);
}

function typingIn(target: EventTarget | null): boolean {
  return target instanceof HTMLElement && (target.isContentEditable || target.closest("input, textarea, select") !== null);
}

function QueueRecord({ record }: { record: ApiRecord }) {
  return (
    <article class="record-detail" aria-label={`${record.type} ${String(record.name ?? "")}`} data-testid="queue-record" data-id={record.id}>
      <header>
        <span class={`kind kind-${record.type}`}>{record.type}</span>
        <h3>{String(record.name ?? "(unnamed)")}</h3>
        <span class="muted mono small">{record.id}</span>
        <span class="muted small">{formatDateTime(record.created_at)}</span>
      </header>
      {record.error_message ? (
        <div class="notice notice-error">
          <span>{String(record.error_message)}</span>
        </div>
      ) : null}
      <section>
        <h4>Input</h4>
        <ContentView value={record.input} />
      </section>
      <section>
        <h4>Output</h4>
        <ContentView value={record.output} />
      </section>
    </article>
  );
}

export function QueuePage({ queueId, at }: { queueId: string; at: number }) {
  const queue = useApi(() => Promise.all([getQueue(queueId), currentUser()]), [queueId]);
  const current = useApi(() => queueRecordAt(queueId, at - 1), [queueId, at]);
  const [activeId, setActiveId] = useState<string | null>(null);
  const [keyError, setKeyError] = useState<unknown>(null);

  const [info, me] = queue.data ?? [];
  const templates = info?.templates ?? [];
  const record = current.data?.records[0] as (ApiRecord & RecordFeedback) | undefined;
  const total = info?.num_log_records ?? 0;
  const hasNext = current.data?.paginated ?? false;
  const go = (n: number) => navigate(hrefOf({ view: "queue", queueId, at: n }), { replace: true });

  const afterWrite = (write: Promise<unknown>) =>
    write.then(() => {
      current.reload();
      queue.reload();
    });
  const save = (template: AnnotationTemplate, value: RatingValue, explanation: string | null) =>
    afterWrite(putQueueRating(queueId, record!.id, template.id, ratingBody(template.constraints, value, explanation)));

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || typingIn(event.target)) return;
      if (NEXT_KEYS.has(event.key)) {
        if (hasNext) go(at + 1);
      } else if (PREVIOUS_KEYS.has(event.key)) {
        if (at > 1) go(at - 1);
      } else if (record && me && (event.key in THUMB_KEYS || STAR_KEYS.has(event.key))) {
        const thumbs = event.key in THUMB_KEYS;
        const template = keyTarget(templates, activeId, thumbs ? "like_dislike" : "star");
        if (!template) return;
        const saved = record.annotations?.[template.id]?.[me.id];
        setKeyError(null);
        save(template, thumbs ? THUMB_KEYS[event.key]! : Number(event.key), saved?.explanation ?? null).catch(setKeyError);
      } else return;
      event.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  });

  // Before any click, the template the thumbs keys rate is the one marked.
  const shownActive = activeId ?? (keyTarget(templates, null, "like_dislike") ?? keyTarget(templates, null, "star"))?.id;
  const mine = me ? (info?.num_logs_annotated?.[me.id] ?? 0) : 0;
  const share = me ? (info?.progress?.[me.id] ?? 0) : 0;
  return (
    <main class="page page-wide">
      <nav class="breadcrumbs" aria-label="Breadcrumbs">
        <Link href={hrefOf({ view: "queues" })}>Annotation queues</Link> / <span>{info?.name ?? "…"}</span>
      </nav>
      <h1>{info?.name ?? "Queue"}</h1>
      {queue.error ? <ErrorNotice error={queue.error} onRetry={queue.reload} /> : null}
      {info ? (
        <div class="queue-progress" data-testid="queue-progress">
          <span data-testid="queue-position">
            Record {at} of {total}
          </span>
          <progress max={1} value={share} aria-label="Your progress" />
          <span data-testid="my-progress">
            You: {mine} of {total} done ({Math.round(share * 100)}%)
          </span>
          <span class="muted small">Everyone: {Math.round((info.overall_progress ?? 0) * 100)}%</span>
        </div>
      ) : null}
      <div class="queue-nav">
        <button type="button" disabled={at <= 1} onClick={() => go(at - 1)}>
          ← Previous
        </button>
        <button type="button" disabled={!hasNext} onClick={() => go(at + 1)}>
          Next →
        </button>
        <span class="key-hints">
          Keys: <kbd>←</kbd>/<kbd>p</kbd> previous, <kbd>→</kbd>/<kbd>n</kbd> next, <kbd>l</kbd> like, <kbd>d</kbd> dislike, <kbd>1</kbd>–<kbd>5</kbd> stars
        </span>
      </div>
      {current.error ? <ErrorNotice error={current.error} onRetry={current.reload} /> : null}
      {keyError ? (
        <p class="field-error" role="alert" data-testid="rating-error">
          {ratingErrorText(keyError)}
        </p>
      ) : null}
      {current.data && !record ? (
        <p class="muted">
          No record here: the queue has {total} records. <Link href={hrefOf({ view: "queue", queueId, at: 1 })}>Back to the first</Link>.
        </p>
      ) : null}
      {record && me ? (
        <div class="queue-walk">
          <QueueRecord record={record} />
          <section class="queue-templates card" aria-label="Ratings">
            {templates.length === 0 ? <p class="muted small">This queue has no templates yet.</p> : null}
            {templates.map((template) => (
              <div
                key={template.id}
                class={`template-ratings-wrap${shownActive === template.id ? " active" : ""}`}
                onFocusIn={() => setActiveId(template.id)}
                onClick={() => setActiveId(template.id)}
              >
                <TemplateRatings
                  template={template}
                  feedback={record}
                  meId={me.id}
                  save={(value, explanation) => save(template, value, explanation)}
                  remove={() => afterWrite(deleteQueueRating(queueId, record.id, template.id))}
                />
              </div>
            ))}
          </section>
        </div>
      ) : null}
    </main>
  );
}
