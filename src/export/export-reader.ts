/**
 * Reads an export a page at a time, by keyset: each page continues from the last record of the
 * one before (its created_at and id), so page N costs what page 1 costs, where an offset would
 * walk every earlier record again. The pages are the search's statements (src/search): the same
 * filter compiler, tenancy guard, access paths and scan classification; the keyset is two extra
 * conditions the driving index serves (created_at = X AND id beyond Y, then created_at beyond X),
 * so the order is created_at, then id, in the requested direction.
 *
 * Descendants are read for one page of roots at a time (a session's traces, a trace's spans, a
 * span's spans below it), themselves by keyset pages, and nested or listed by the caller.
 */
import type { RecordFamily } from "../columns/standard-columns";
import { compileSearchQuery, type SearchScope } from "../search/compile-search-query";
import { resolveColumn } from "../search/search-columns";
import type { FilterLeaf, FilterNode, SearchQuery } from "../search/search-query";
import { type StoredRow, shapeRecord } from "../search/shape-record";
import type { ExportRecord } from "./export-formats";

/** Roots per page: their descendants are held in memory while the page is written. */
export const ROOT_PAGE_SIZE = 100;
/** Descendants read per statement. */
const DESCENDANT_PAGE_SIZE = 1000;

export interface ExportSource {
  db: D1Database;
  scope: SearchScope;
  /** Runs one page's statement (admitted by its scan class by the caller). */
  admit: <T>(query: SearchQuery, work: () => Promise<T>) => Promise<T>;
}

interface Keyset {
  createdAt: number;
  id: string;
}

/**
 * Where a keyset walk stands after a page: past `after` (within its created_at while `tie`).
 * Plain JSON: a queued export stores it between queue messages and continues from it.
 */
export interface KeysetCursor {
  after: Keyset;
  tie: boolean;
}

const column = (id: string, family: RecordFamily) => {
  const resolved = resolveColumn(id, family);
  if (!resolved.ok) throw new Error(`export: column ${id} does not resolve for ${family}`);
  return resolved.ref;
};

const leaf = (l: FilterLeaf): FilterNode => ({ kind: "leaf", leaf: l });

/** The filter of the page after `after`, in the query's direction (`tie`: within after's created_at). */
function keysetFilter(query: SearchQuery, after: Keyset, tie: boolean): FilterNode {
  const ascending = query.sort?.ascending ?? false;
  const beyond = ascending ? "gt" : "lt";
  const createdAt = column("created_at", query.family);
  const conditions: FilterNode[] = tie
    ? [
        leaf({ kind: "compare", column: createdAt, operator: "eq", value: after.createdAt, caseSensitive: true }),
        leaf({ kind: "compare", column: column("id", query.family), operator: beyond, value: after.id, caseSensitive: true }),
      ]
    : [leaf({ kind: "compare", column: createdAt, operator: beyond, value: after.createdAt, caseSensitive: true })];
  return { kind: "and", children: [query.filter, ...conditions] };
}

async function readPage(source: ExportSource, query: SearchQuery): Promise<StoredRow[]> {
  const statement = compileSearchQuery(query, source.scope);
  return source.admit(query, async () => (await source.db.prepare(statement.sql).bind(...statement.params).all<StoredRow>()).results);
}

/**
 * Every record of `query` (its filter, its direction), page after page of `pageSize`, from the
 * start or from `start`. Each page is shaped and yielded whole with the cursor after it; the
 * next is read only when the caller asks for it.
 */
export async function* keysetPages(
  source: ExportSource,
  query: SearchQuery,
  pageSize: number,
  start?: KeysetCursor,
): AsyncGenerator<{ rows: StoredRow[]; records: ExportRecord[]; cursor: KeysetCursor }> {
  let after: Keyset | undefined = start?.after;
  let tie = start?.tie ?? false;
  for (;;) {
    const paged: SearchQuery = { ...query, limit: pageSize, offset: 0, filter: after ? keysetFilter(query, after, tie) : query.filter };
    const rows = await readPage(source, paged);
    if (rows.length === 0) {
      // The tail of the last created_at is done: go on past it; past it and empty: the end.
      if (after && tie) {
        tie = false;
        continue;
      }
      return;
    }
    const last = rows[rows.length - 1]!;
    after = { createdAt: Number(last.created_at), id: String(last.id) };
    const readTie = tie;
    tie = true;
    yield { rows, records: rows.map((row) => shapeRecord(row, query) as ExportRecord), cursor: { after, tie } };
    // The statement reads pageSize + 1 rows (compileSearchQuery) and returns them unless its byte
    // budget cuts the page (`_rows_read` counts them before the cut). Fewer read, none cut: nothing
    // is left where it read. Past the tie (or from the start) that is the end, without the two
    // empty statements that would confirm it; within the tie, the walk goes on past the
    // created_at at once. Most descendant walks fit one page: one statement instead of three.
    const read = Number(rows[0]!._rows_read ?? rows.length);
    if (read <= pageSize && rows.length === read) {
      if (!readTie) return;
      tie = false;
    }
  }
}

/** A query for the records of `family` with the given filter, every field, oldest first. */
function descendantQuery(base: SearchQuery, family: RecordFamily, filter: FilterNode): SearchQuery {
  return { ...base, family, filter, sort: { column: column("created_at", family), ascending: true } };
}

const inList = (family: RecordFamily, id: string, values: string[]): FilterNode =>
  leaf({ kind: "in", column: column(id, family), negated: false, values, caseSensitive: true });

async function readAll(source: ExportSource, query: SearchQuery): Promise<ExportRecord[]> {
  const out: ExportRecord[] = [];
  for await (const page of keysetPages(source, query, DESCENDANT_PAGE_SIZE)) out.push(...page.records);
  return out;
}

/**
 * The descendants of one page of roots, keyed by parent: a trace's session id maps to its
 * traces, a span's parent id to its child spans (a top-level span's parent is its trace).
 * `matching` (span roots only): the descendants that match the export's filter themselves.
 */
export async function descendantsOf(
  source: ExportSource,
  base: SearchQuery,
  roots: readonly ExportRecord[],
): Promise<{ children: Map<string, ExportRecord[]>; matching: Set<string> }> {
  const children = new Map<string, ExportRecord[]>();
  const add = (parent: unknown, record: ExportRecord) => {
    const key = String(parent);
    const list = children.get(key);
    if (list) list.push(record);
    else children.set(key, [record]);
  };
  const matching = new Set<string>();
  if (roots.length === 0) return { children, matching };
  let traceIds: string[];
  if (base.family === "session") {
    const traces = await readAll(source, descendantQuery(base, "trace", inList("trace", "session_id", roots.map((r) => String(r.id)))));
    for (const trace of traces) add(trace.session_id, trace);
    traceIds = traces.map((t) => String(t.id));
  } else if (base.family === "trace") {
    traceIds = roots.map((r) => String(r.id));
  } else {
    traceIds = [...new Set(roots.map((r) => String(r.trace_id)))];
    const matched = await readAll(source, descendantQuery(base, "span", { kind: "and", children: [base.filter, inList("span", "trace_id", traceIds)] }));
    for (const span of matched) matching.add(String(span.id));
  }
  if (traceIds.length > 0) {
    const spans = await readAll(source, descendantQuery(base, "span", inList("span", "trace_id", traceIds)));
    for (const span of spans) add(span.parent_id, span);
  }
  return { children, matching };
}
