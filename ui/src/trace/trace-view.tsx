/**
 * One trace: its span tree beside a waterfall (each record a bar on the trace's time axis), and
 * the selected record in full. Keys: arrows move through the tree (right/left open and close a
 * branch), Escape closes the view.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { fullSearch, getRecord, type RunRef } from "../api/endpoints";
import type { ApiRecord } from "../api/types";
import { formatDurationMs } from "../format/values";
import { Highlighted } from "../text-search/highlighted";
import { ErrorNotice } from "../views/error-notice";
import { useApi } from "../views/use-api";
import { RatingsPanel } from "../annotations/ratings-panel";
import { RecordDetail } from "./record-detail";
import { buildTimeline, type TreeNode, visibleRows } from "./span-tree";

/** Spans of a trace, read a page of 1,000 at a time (the search's maximum). */
const MAX_SPAN_PAGES = 20;

/**
 * The trace by a full search of its id (the by-id lookup has no `metric_info`): its scores come
 * with their status and explanation. Not found there (outside the run), the lookup says why.
 */
async function traceWithScores(run: RunRef, traceId: string): Promise<ApiRecord> {
  const found = await fullSearch(run, "traces", { filters: [{ type: "id", column_id: "id", operator: "eq", value: traceId }], limit: 1, starting_token: 0, include_code_metric_metadata: true });
  return found.records[0] ?? getRecord(run.projectId, "traces", traceId);
}

export async function loadTrace(run: RunRef, traceId: string): Promise<{ trace: ApiRecord; spans: ApiRecord[] }> {
  const tracePromise = traceWithScores(run, traceId);
  const spans: ApiRecord[] = [];
  for (let page = 0; page < MAX_SPAN_PAGES; page++) {
    const answer = await fullSearch(run, "spans", {
      filters: [{ type: "id", column_id: "trace_id", operator: "eq", value: traceId }],
      sort: { column_id: "created_at", ascending: true },
      limit: 1000,
      starting_token: page * 1000,
      include_code_metric_metadata: true,
    });
    spans.push(...answer.records);
    if (!answer.paginated) break;
  }
  return { trace: await tracePromise, spans };
}

interface Props {
  run: RunRef;
  traceId: string;
  spanId: string | null;
  onSelect: (spanId: string | null) => void;
  onClose: () => void;
  units?: ReadonlyMap<string, string>;
}

function Axis({ total }: { total: number }) {
  return (
    <div class="axis" aria-hidden="true">
      {[0, 0.25, 0.5, 0.75, 1].map((f) => (
        <span key={f} style={{ left: `${f * 100}%` }}>
          {formatDurationMs(total * f)}
        </span>
      ))}
    </div>
  );
}

function Bar({ node, total }: { node: TreeNode; total: number }) {
  const left = (node.start / total) * 100;
  const width = node.duration === null ? 0 : Math.max((node.duration / total) * 100, 0.4);
  const failed = typeof node.record.status_code === "number" && node.record.status_code >= 400;
  return (
    <div class="bar-track">
      <div
        class={`bar kind-bg-${node.record.type}${node.duration === null ? " bar-point" : ""}${failed ? " bar-failed" : ""}`}
        style={{ left: `${Math.min(left, 99.6)}%`, width: node.duration === null ? undefined : `${Math.min(width, 100 - left)}%` }}
        data-testid="waterfall-bar"
        title={`${node.record.type} ${String(node.record.name ?? "")}: starts at ${formatDurationMs(node.start)}${node.duration === null ? "" : `, lasts ${formatDurationMs(node.duration)}`}`}
      />
    </div>
  );
}

export function TraceView({ run, traceId, spanId, onSelect, onClose, units = new Map() }: Props) {
  const loaded = useApi(() => loadTrace(run, traceId), [run, traceId]);
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const tree = useRef<HTMLDivElement>(null);
  const timeline = useMemo(() => (loaded.data ? buildTimeline(loaded.data.trace, loaded.data.spans) : null), [loaded.data]);
  const rows = useMemo(() => (timeline ? visibleRows(timeline.root, collapsed) : []), [timeline, collapsed]);
  const selectedId = spanId ?? traceId;
  const selected = timeline?.byId.get(selectedId) ?? timeline?.root;

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);

  useEffect(() => {
    tree.current?.querySelector<HTMLElement>('[aria-selected="true"]')?.focus({ preventScroll: false });
  }, [selectedId, rows.length]);

  const select = (id: string) => onSelect(id === traceId ? null : id);
  const toggle = (id: string, open?: boolean) =>
    setCollapsed((c) => {
      const next = new Set(c);
      const isOpen = !next.has(id);
      if (open ?? !isOpen) next.delete(id);
      else next.add(id);
      return next;
    });

  const onKeyDown = (event: KeyboardEvent) => {
    if (!timeline || !selected) return;
    const index = rows.findIndex((r) => r.record.id === selected.record.id);
    const id = selected.record.id;
    const go = (row: TreeNode | undefined) => {
      event.preventDefault();
      if (row) select(row.record.id);
    };
    if (event.key === "ArrowDown") go(rows[index + 1]);
    else if (event.key === "ArrowUp") go(rows[index - 1]);
    else if (event.key === "Home") go(rows[0]);
    else if (event.key === "End") go(rows[rows.length - 1]);
    else if (event.key === "ArrowRight") {
      event.preventDefault();
      if (collapsed.has(id)) toggle(id, true);
      else if (selected.children[0]) select(selected.children[0].record.id);
    } else if (event.key === "ArrowLeft") {
      event.preventDefault();
      if (selected.children.length > 0 && !collapsed.has(id)) toggle(id, false);
      else {
        const parent = timeline.parentOf.get(id);
        if (parent) select(parent);
      }
    }
  };

  return (
    <div class="overlay" role="dialog" aria-modal="true" aria-label="Trace" data-testid="trace-view">
      <div class="overlay-panel">
        <header class="overlay-header">
          <h2>
            <span class="kind kind-trace">trace</span> <Highlighted text={String(loaded.data?.trace.name ?? "…")} />
          </h2>
          {timeline ? (
            <span class="muted">
              {loaded.data!.spans.length} spans · {formatDurationMs(timeline.total)}
            </span>
          ) : null}
          <button type="button" class="icon-button close" aria-label="Close trace" onClick={onClose}>
            ×
          </button>
        </header>
        {loaded.error ? <ErrorNotice error={loaded.error} onRetry={loaded.reload} /> : null}
        {loaded.loading && !loaded.data ? <p class="muted">Loading the trace…</p> : null}
        {timeline && selected ? (
          <div class="trace-body">
            <div class="waterfall">
              <div class="waterfall-head">
                <span>Span</span>
                <Axis total={timeline.total} />
              </div>
              <div role="tree" aria-label="Span tree" ref={tree} onKeyDown={onKeyDown} data-testid="span-tree">
                {rows.map((node) => {
                  const id = node.record.id;
                  const isSelected = id === selected.record.id;
                  const failed = typeof node.record.status_code === "number" && node.record.status_code >= 400;
                  return (
                    <div
                      key={id}
                      role="treeitem"
                      aria-level={node.depth + 1}
                      aria-selected={isSelected}
                      aria-expanded={node.children.length > 0 ? !collapsed.has(id) : undefined}
                      tabIndex={isSelected ? 0 : -1}
                      class={`tree-row${isSelected ? " selected" : ""}`}
                      data-id={id}
                      onClick={() => select(id)}
                    >
                      <span class="tree-label" style={{ paddingLeft: `${node.depth * 14}px` }}>
                        {node.children.length > 0 ? (
                          <button
                            type="button"
                            class="twisty"
                            tabIndex={-1}
                            aria-label={collapsed.has(id) ? "Expand" : "Collapse"}
                            onClick={(e) => {
                              e.stopPropagation();
                              toggle(id);
                            }}
                          >
                            {collapsed.has(id) ? "▸" : "▾"}
                          </button>
                        ) : (
                          <span class="twisty" />
                        )}
                        <span class={`kind kind-${node.record.type}`}>{node.record.type}</span>
                        <span class="tree-name">
                          <Highlighted text={String(node.record.name ?? "")} />
                        </span>
                        {failed ? (
                          <span class="status-failed small" title={String(node.record.error_message ?? "")}>
                            ● {String(node.record.status_code)}
                          </span>
                        ) : null}
                        <span class="tree-duration muted">{node.duration === null ? "" : formatDurationMs(node.duration)}</span>
                      </span>
                      <Bar node={node} total={timeline.total} />
                    </div>
                  );
                })}
              </div>
            </div>
            <RecordDetail record={selected.record} units={units}>
              <RatingsPanel key={selected.record.id} projectId={run.projectId} family={selected.record.id === traceId ? "traces" : "spans"} recordId={selected.record.id} />
            </RecordDetail>
          </div>
        ) : null}
      </div>
    </div>
  );
}
