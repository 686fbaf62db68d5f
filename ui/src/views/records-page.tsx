/**
 * A run's records: traces, spans or sessions, as a filtered, sorted, paged table with the total
 * count, and the open trace or session over it. Everything the user chose is in the URL.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import { ApiError } from "../api/client";
import { availableColumns, countRecords, getProject, listRuns, partialSearch, type RunRef } from "../api/endpoints";
import { ExportMenu } from "../export/export-menu";
import type { ApiRecord, CountAnswer, Family } from "../api/types";
import { isAnnotationColumn } from "../annotations/annotation-cell";
import { FilterBuilder } from "../filters/filter-builder";
import { columnTitle } from "../format/values";
import { Link, navigate } from "../routing/navigation";
import { hrefOf, PAGE_SIZES, type Route, type TableState } from "../routing/routes";
import { HighlightText } from "../text-search/highlighted";
import { TextSearchBox } from "../text-search/search-box";
import { withTextSearch } from "../text-search/text-query";
import { SessionView } from "../trace/session-view";
import { TraceView } from "../trace/trace-view";
import { ColumnPicker } from "./column-picker";
import { ErrorNotice } from "./error-notice";
import { RecordsTable, type TableColumn } from "./records-table";
import { useApi } from "./use-api";

type RecordsRoute = Extract<Route, { view: "records" }>;

const DEFAULT_COLUMNS: Record<Family, string[]> = {
  traces: ["name", "input", "output", "tags", "status_code", "metrics/duration_ns", "metrics/toxicity", "created_at"],
  spans: ["type", "name", "input", "output", "model", "status_code", "metrics/duration_ns", "created_at"],
  sessions: ["name", "external_id", "input", "created_at"],
};

/** Counts the service adds with include_counts, shown as a column of their own. */
const COUNT_COLUMN: Partial<Record<Family, { id: string; label: string }>> = {
  traces: { id: "num_spans", label: "Spans" },
  sessions: { id: "num_traces", label: "Traces" },
};

const FAMILY_LABELS: Record<Family, string> = { traces: "Traces", spans: "Spans", sessions: "Sessions" };

interface Page {
  records: ApiRecord[];
  answeredAt: number;
  hasMore: boolean;
  count: CountAnswer | null;
}

export function RecordsPage({ route }: { route: RecordsRoute }) {
  const { projectId, kind, runId, family, table } = route;
  const run: RunRef = useMemo(() => ({ projectId, kind, runId }), [projectId, kind, runId]);
  const project = useApi(() => getProject(projectId), [projectId]);
  const runs = useApi(() => listRuns(projectId, kind), [projectId, kind]);
  const columns = useApi(() => availableColumns(run, family), [run, family]);
  const [page, setPage] = useState<Page | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(false);
  const [showFilter, setShowFilter] = useState(table.filter !== null);
  const [attempt, setAttempt] = useState(0);

  const setTable = (patch: Partial<TableState>, options?: { replace?: boolean }) =>
    navigate(hrefOf({ ...route, table: { ...table, ...patch } }), options);

  const byId = useMemo(() => new Map((columns.data ?? []).map((c) => [c.id, c])), [columns.data]);
  const visible = useMemo(() => {
    if (table.cols) return table.cols;
    return DEFAULT_COLUMNS[family].filter((id) => byId.has(id));
  }, [table.cols, family, byId]);
  const tableColumns: TableColumn[] = useMemo(() => {
    const list = visible.map((id) => {
      const column = byId.get(id);
      return { id, column, label: column ? columnTitle(column) : id };
    });
    const count = COUNT_COLUMN[family];
    if (count) list.push({ id: count.id, column: undefined, label: count.label });
    return list;
  }, [visible, byId, family]);

  // The filter tree the service is asked for: the user's tree and the searched text.
  const searched = useMemo(() => withTextSearch(table.filter, table.text), [JSON.stringify(table.filter), table.text]);
  const filterKey = JSON.stringify(searched);
  const sortKey = JSON.stringify(table.sort);
  const colsKey = visible.join(",");
  useEffect(() => {
    if (!columns.data) return;
    let current = true;
    setLoading(true);
    // A 422 belongs to the tree it was about: never show it against the next one.
    setError(null);
    const offset = (table.page - 1) * table.size;
    // The columns shown, plus what opening a row and the metadata key suggestions need.
    const requested = [...new Set([...visible, "user_metadata", ...(family === "spans" ? ["trace_id"] : [])])];
    const search = partialSearch(run, family, {
      filterTree: searched,
      sort: table.sort,
      offset,
      limit: table.size,
      columns: requested,
      includeCounts: family !== "spans",
      includeFeedback: visible.some(isAnnotationColumn),
    }).then((answer) => ({ answer, answeredAt: performance.now() }));
    const count = countRecords(run, family, searched).catch(() => null);
    search.then(
      async ({ answer, answeredAt }) => {
        if (!current) return;
        setPage({ records: answer.records, answeredAt, hasMore: answer.paginated, count: null });
        setError(null);
        setLoading(false);
        const total = await count;
        if (current) setPage((p) => (p ? { ...p, count: total } : p));
      },
      (caught: unknown) => {
        if (!current) return;
        setError(caught);
        setLoading(false);
        if (caught instanceof ApiError && caught.status === 422) setShowFilter(true);
      },
    );
    return () => {
      current = false;
    };
  }, [run, family, filterKey, sortKey, table.page, table.size, colsKey, columns.data, attempt]);

  const onSort = (column: string) => {
    const current = table.sort?.column === column ? table.sort : null;
    const next = !current ? { column, ascending: true } : current.ascending ? { column, ascending: false } : null;
    setTable({ sort: next, page: 1 });
  };

  const onOpen = (record: ApiRecord) => {
    if (family === "spans") setTable({ open: String(record.trace_id ?? ""), span: record.id });
    else setTable({ open: record.id, span: null });
  };

  const units = useMemo(
    () => new Map((columns.data ?? []).filter((c) => c.id.startsWith("metrics/") && c.data_unit).map((c) => [c.id.slice("metrics/".length), c.data_unit!])),
    [columns.data],
  );

  const metadataKeys = useMemo(() => {
    const keys = new Set<string>();
    for (const r of page?.records ?? []) for (const k of Object.keys((r.user_metadata as Record<string, unknown>) ?? {})) keys.add(k);
    return [...keys].sort();
  }, [page]);

  const validation = error instanceof ApiError && error.status === 422 ? error.validation : [];
  const runName = runs.data?.find((r) => r.id === runId)?.name;
  const offset = (table.page - 1) * table.size;
  const shown = page?.records.length ?? 0;

  return (
    <main class="page page-wide">
      <nav class="breadcrumbs" aria-label="Breadcrumbs">
        <Link href="/">Projects</Link> / <Link href={hrefOf({ view: "project", projectId })}>{project.data?.name ?? "…"}</Link> /{" "}
        <span>
          {kind === "log_streams" ? "log stream" : "experiment"} {runName ?? runId.slice(0, 8)}
        </span>
      </nav>
      <div class="records-header">
        <nav class="tabs" aria-label="Record kind">
          <Link href={hrefOf({ view: "dashboard", projectId, kind, runId, search: "" })}>Dashboard</Link>
          {(["traces", "spans", "sessions"] as const).map((f) => (
            <Link
              key={f}
              href={hrefOf({ ...route, family: f, table: { filter: null, text: table.text, sort: null, page: 1, size: table.size, cols: null, open: null, span: null } })}
              aria-current={f === family ? "page" : undefined}
            >
              {FAMILY_LABELS[f]}
            </Link>
          ))}
          <Link href={hrefOf({ view: "alerts", projectId, kind, runId, search: "" })}>Alerts</Link>
        </nav>
        <div class="toolbar">
          <button type="button" aria-expanded={showFilter} onClick={() => setShowFilter(!showFilter)} data-testid="filter-toggle">
            Filter{table.filter ? " (on)" : ""}
          </button>
          {columns.data ? <ColumnPicker columns={columns.data} visible={visible} onChange={(cols) => setTable({ cols })} /> : null}
          <ExportMenu run={run} family={family} filter={table.filter} sort={table.sort} columns={visible} onDeleted={() => setAttempt((n) => n + 1)} />
        </div>
      </div>
      {columns.error ? <ErrorNotice error={columns.error} onRetry={columns.reload} /> : null}
      {showFilter && columns.data ? (
        <FilterBuilder columns={columns.data} metadataKeys={metadataKeys} value={table.filter} errors={validation} onApply={(filter) => setTable({ filter, page: 1 })} />
      ) : null}
      <TextSearchBox value={table.text} onSearch={(text) => setTable({ text, page: 1 }, { replace: true })} />
      {error ? <ErrorNotice error={error} onRetry={() => setAttempt((n) => n + 1)} /> : null}
      <HighlightText.Provider value={table.text}>
        {page ? (
          <>
            <RecordsTable
              columns={tableColumns}
              records={page.records}
              answeredAt={page.answeredAt}
              sort={table.sort}
              onSort={onSort}
              onOpen={onOpen}
              openId={family === "spans" ? table.span : table.open}
            />
            {page.records.length === 0 ? <p class="muted empty-table">No {family} match.</p> : null}
          </>
        ) : loading ? (
          <p class="muted">Loading…</p>
        ) : null}
        <Pager
          offset={offset}
          shown={shown}
          hasMore={page?.hasMore ?? false}
          count={page?.count ?? null}
          page={table.page}
          size={table.size}
          loading={loading}
          onPage={(p) => setTable({ page: p })}
          onSize={(size) => setTable({ size, page: 1 })}
        />
        {table.open && family === "sessions" ? (
          <SessionView run={run} sessionId={table.open} onClose={() => setTable({ open: null, span: null })} />
        ) : table.open ? (
          <TraceView run={run} units={units} traceId={table.open} spanId={table.span} onSelect={(span) => setTable({ span }, { replace: true })} onClose={() => setTable({ open: null, span: null })} />
        ) : null}
      </HighlightText.Provider>
    </main>
  );
}

interface PagerProps {
  offset: number;
  shown: number;
  hasMore: boolean;
  count: CountAnswer | null;
  page: number;
  size: number;
  loading: boolean;
  onPage: (page: number) => void;
  onSize: (size: number) => void;
}

function Pager({ offset, shown, hasMore, count, page, size, loading, onPage, onSize }: PagerProps) {
  const total = count ? `${count.total_count.toLocaleString("en-US")}${count.capped ? "+" : ""}` : "…";
  const range = shown === 0 ? "0" : `${(offset + 1).toLocaleString("en-US")}–${(offset + shown).toLocaleString("en-US")}`;
  return (
    <div class="pager" aria-label="Pages">
      <span data-testid="page-range" aria-live="polite">
        {range} of {total}
      </span>
      <label class="inline-check">
        Rows per page
        <select aria-label="Rows per page" value={String(size)} onChange={(e) => onSize(Number(e.currentTarget.value))}>
          {PAGE_SIZES.map((n) => (
            <option key={n} value={String(n)}>
              {n}
            </option>
          ))}
        </select>
      </label>
      <button type="button" disabled={page <= 1 || loading} onClick={() => onPage(page - 1)}>
        ← Previous
      </button>
      <span>Page {page}</span>
      <button type="button" disabled={!hasMore || loading} onClick={() => onPage(page + 1)}>
        Next →
      </button>
    </div>
  );
}
