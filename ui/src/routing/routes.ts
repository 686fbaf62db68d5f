/**
 * The page's state lives in its URL, so a link can be shared and the back button works:
 *
 *   /                                                   projects
 *   /projects/{pid}                                     the project: opens the dashboard of its latest run
 *   /projects/{pid}/{log_streams|experiments}/{rid}/dashboard?range=&from=&to=&group=
 *                                                       the run's charts (ui/src/dashboard/)
 *   /projects/{pid}/{log_streams|experiments}/{rid}/{traces|spans|sessions}
 *       ?filter=<filter tree JSON>&q=<searched text>&sort=<column>:<asc|desc>&page=<n>&size=<n>&cols=<id,id>
 *       &open=<trace or session id>&span=<span id>
 *   /projects/{pid}/{log_streams|experiments}/{rid}/alerts?new=1&metric=&threshold=&filters=&window=
 *                                                       the run's alert rules, their state and history; a new
 *                                                       rule's form prefilled from a dashboard chart (ui/src/alerts/)
 *   /alert-channels                                     the organization's notification channels (ui/src/alerts/)
 *   /scorers                                            the organization's scorers (ui/src/evaluations/)
 *   /projects/{pid}/redaction                           the project's redaction policy (ui/src/redaction/)
 *   /erase                                              deletion by metadata (admins)
 *   /annotation-queues                                  the organization's annotation queues
 *   /annotation-queues/{qid}?at=<n>                     walking a queue's records, the n-th (1-based)
 *   /sign-in?next=<path>
 *
 * None of these paths is an API route (those are under /v2, or /login, /healthcheck, /docs,
 * /openapi.json), so the SPA fallback of the assets never shadows one.
 */
import type { Family, FilterJson, RunKind } from "../api/types";

export const PAGE_SIZES = [25, 50, 100, 200] as const;
export const DEFAULT_PAGE_SIZE = 50;

export interface TableState {
  filter: FilterJson | null;
  /** Text searched in inputs, outputs and names (ui/src/text-search), ANDed with the filter. */
  text: string | null;
  sort: { column: string; ascending: boolean } | null;
  /** 1-based. */
  page: number;
  size: number;
  /** Visible columns; null: the defaults of the family. */
  cols: string[] | null;
  /** The trace (traces, spans) or session (sessions) shown over the table. */
  open: string | null;
  /** The selected span of the open trace. */
  span: string | null;
}

export type Route =
  | { view: "sign-in"; next: string }
  | { view: "projects" }
  | { view: "project"; projectId: string }
  | { view: "records"; projectId: string; kind: RunKind; runId: string; family: Family; table: TableState }
  /** The query string is the dashboard's own (ui/src/dashboard/dashboard-state.ts). */
  | { view: "dashboard"; projectId: string; kind: RunKind; runId: string; search: string }
  | { view: "redaction"; projectId: string }
  /** The query string is the new rule's prefill (ui/src/alerts/rule-prefill.ts). */
  | { view: "alerts"; projectId: string; kind: RunKind; runId: string; search: string }
  | { view: "channels" }
  | { view: "scorers" }
  | { view: "erase" }
  | { view: "queues" }
  | { view: "queue"; queueId: string; at: number }
  | { view: "not-found"; path: string };

const FAMILIES: readonly Family[] = ["traces", "spans", "sessions"];
const RUN_KINDS: readonly RunKind[] = ["log_streams", "experiments"];

function parseFilter(text: string | null): FilterJson | null {
  if (!text) return null;
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed && typeof parsed === "object" ? (parsed as FilterJson) : null;
  } catch {
    return null;
  }
}

function parseSort(text: string | null): TableState["sort"] {
  if (!text) return null;
  const at = text.lastIndexOf(":");
  const column = at > 0 ? text.slice(0, at) : text;
  return column ? { column, ascending: text.slice(at + 1) !== "desc" } : null;
}

function positiveInt(text: string | null, fallback: number): number {
  const n = Number(text);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

export function parseTableState(params: URLSearchParams): TableState {
  const size = positiveInt(params.get("size"), DEFAULT_PAGE_SIZE);
  const cols = params.get("cols");
  return {
    filter: parseFilter(params.get("filter")),
    text: params.get("q") || null,
    sort: parseSort(params.get("sort")),
    page: positiveInt(params.get("page"), 1),
    size: (PAGE_SIZES as readonly number[]).includes(size) ? size : DEFAULT_PAGE_SIZE,
    cols: cols ? cols.split(",").filter(Boolean) : null,
    open: params.get("open"),
    span: params.get("span"),
  };
}

export function parseLocation(pathname: string, search: string): Route {
  const params = new URLSearchParams(search);
  const parts = pathname.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { view: "projects" };
  if (parts[0] === "sign-in" && parts.length === 1) return { view: "sign-in", next: params.get("next") ?? "/" };
  if (parts[0] === "erase" && parts.length === 1) return { view: "erase" };
  if (parts[0] === "alert-channels" && parts.length === 1) return { view: "channels" };
  if (parts[0] === "scorers" && parts.length === 1) return { view: "scorers" };
  if (parts[0] === "annotation-queues" && parts.length === 1) return { view: "queues" };
  if (parts[0] === "annotation-queues" && parts.length === 2) return { view: "queue", queueId: parts[1]!, at: positiveInt(params.get("at"), 1) };
  if (parts[0] === "projects" && parts.length === 2) return { view: "project", projectId: parts[1]! };
  if (parts[0] === "projects" && parts.length === 3 && parts[2] === "redaction") return { view: "redaction", projectId: parts[1]! };
  if (parts[0] === "projects" && parts.length === 5) {
    const [, projectId, kind, runId, family] = parts as [string, string, string, string, string];
    if ((RUN_KINDS as readonly string[]).includes(kind) && family === "dashboard") {
      return { view: "dashboard", projectId, kind: kind as RunKind, runId, search };
    }
    if ((RUN_KINDS as readonly string[]).includes(kind) && family === "alerts") {
      return { view: "alerts", projectId, kind: kind as RunKind, runId, search };
    }
    if ((RUN_KINDS as readonly string[]).includes(kind) && (FAMILIES as readonly string[]).includes(family)) {
      return { view: "records", projectId, kind: kind as RunKind, runId, family: family as Family, table: parseTableState(params) };
    }
  }
  return { view: "not-found", path: pathname };
}

export function tableQuery(table: Partial<TableState>): string {
  const params = new URLSearchParams();
  if (table.filter) params.set("filter", JSON.stringify(table.filter));
  if (table.text) params.set("q", table.text);
  if (table.sort) params.set("sort", `${table.sort.column}:${table.sort.ascending ? "asc" : "desc"}`);
  if (table.page && table.page > 1) params.set("page", String(table.page));
  if (table.size && table.size !== DEFAULT_PAGE_SIZE) params.set("size", String(table.size));
  if (table.cols) params.set("cols", table.cols.join(","));
  if (table.open) params.set("open", table.open);
  if (table.span) params.set("span", table.span);
  const text = params.toString();
  return text ? `?${text}` : "";
}

export function hrefOf(route: Route): string {
  const enc = encodeURIComponent;
  switch (route.view) {
    case "sign-in":
      return route.next && route.next !== "/" ? `/sign-in?next=${enc(route.next)}` : "/sign-in";
    case "projects":
      return "/";
    case "project":
      return `/projects/${enc(route.projectId)}`;
    case "records":
      return `/projects/${enc(route.projectId)}/${route.kind}/${enc(route.runId)}/${route.family}${tableQuery(route.table)}`;
    case "dashboard":
      return `/projects/${enc(route.projectId)}/${route.kind}/${enc(route.runId)}/dashboard${route.search}`;
    case "redaction":
      return `/projects/${enc(route.projectId)}/redaction`;
    case "alerts":
      return `/projects/${enc(route.projectId)}/${route.kind}/${enc(route.runId)}/alerts${route.search}`;
    case "channels":
      return "/alert-channels";
    case "scorers":
      return "/scorers";
    case "erase":
      return "/erase";
    case "queues":
      return "/annotation-queues";
    case "queue":
      return `/annotation-queues/${enc(route.queueId)}${route.at > 1 ? `?at=${route.at}` : ""}`;
    case "not-found":
      return route.path;
  }
}

export function emptyTable(): TableState {
  return { filter: null, text: null, sort: null, page: 1, size: DEFAULT_PAGE_SIZE, cols: null, open: null, span: null };
}
