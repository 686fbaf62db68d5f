/** A session: its traces in order, as the conversation they were, each one openable. */
import { useEffect } from "preact/hooks";
import { fullSearch, getRecord, type RunRef } from "../api/endpoints";
import type { ApiRecord } from "../api/types";
import { formatDateTime, formatDurationMs } from "../format/values";
import { Link } from "../routing/navigation";
import { emptyTable, hrefOf } from "../routing/routes";
import { ErrorNotice } from "../views/error-notice";
import { useApi } from "../views/use-api";
import { RatingsPanel } from "../annotations/ratings-panel";
import { ContentView } from "./content-view";
import { durationMs } from "./span-tree";

async function loadSession(run: RunRef, sessionId: string): Promise<{ session: ApiRecord; traces: ApiRecord[] }> {
  const [session, traces] = await Promise.all([
    getRecord(run.projectId, "sessions", sessionId),
    fullSearch(run, "traces", {
      filters: [{ type: "id", column_id: "session_id", operator: "eq", value: sessionId }],
      sort: { column_id: "created_at", ascending: true },
      limit: 1000,
      starting_token: 0,
    }),
  ]);
  return { session, traces: traces.records };
}

export function SessionView({ run, sessionId, onClose }: { run: RunRef; sessionId: string; onClose: () => void }) {
  const loaded = useApi(() => loadSession(run, sessionId), [run, sessionId]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);
  const session = loaded.data?.session;
  const metadata = Object.entries((session?.user_metadata as Record<string, string> | undefined) ?? {});
  return (
    <div class="overlay" role="dialog" aria-modal="true" aria-label="Session" data-testid="session-view">
      <div class="overlay-panel overlay-narrow">
        <header class="overlay-header">
          <h2>
            <span class="kind kind-session">session</span> {String(session?.name ?? "…")}
          </h2>
          {loaded.data ? <span class="muted">{loaded.data.traces.length} traces</span> : null}
          <button type="button" class="icon-button close" aria-label="Close session" onClick={onClose}>
            ×
          </button>
        </header>
        {loaded.error ? <ErrorNotice error={loaded.error} onRetry={loaded.reload} /> : null}
        {metadata.length > 0 ? (
          <p class="muted">
            {metadata.map(([k, v]) => (
              <span key={k} class="chip">
                {k}: {v}
              </span>
            ))}
          </p>
        ) : null}
        <RatingsPanel projectId={run.projectId} family="sessions" recordId={sessionId} />
        <ol class="session-turns">
          {loaded.data?.traces.map((trace) => {
            const duration = durationMs(trace);
            return (
              <li key={trace.id} class="session-turn" data-testid="session-turn">
                <div class="turn-meta muted small">
                  <strong>{String(trace.name ?? "")}</strong> · {formatDateTime(trace.created_at)}
                  {duration !== null ? ` · ${formatDurationMs(duration)}` : ""}
                  {trace.error_message ? <span class="status-failed"> · {String(trace.error_message)}</span> : null}{" "}
                  <Link href={hrefOf({ view: "records", projectId: run.projectId, kind: run.kind, runId: run.runId, family: "traces", table: { ...emptyTable(), open: trace.id } })}>
                    Open trace
                  </Link>
                </div>
                <div class="message message-user">
                  <span class="message-role">user</span>
                  <ContentView value={trace.input} />
                </div>
                <div class="message message-assistant">
                  <span class="message-role">assistant</span>
                  <ContentView value={trace.output} />
                </div>
              </li>
            );
          })}
        </ol>
      </div>
    </div>
  );
}
