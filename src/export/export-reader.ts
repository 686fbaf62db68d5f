/**
 * Reads an export a page at a time, by keyset: each page continues from the last record of the
 * one before (its created_at and id), so page N costs what page 1 costs, where an offset would
 * walk every earlier record again. The pages are the search's statements (src/search): the same
 * filter compiler, tenancy guard, access paths and scan classification; the keyset is two extra
 * conditions the driving index serves (created_at = X AND id beyond Y, then created_at beyond X),
 * so the order is created_at, then id, in the requested direction.
 *
 * Below a page of roots, the descendants (a session's traces and their spans, a trace's spans, the
 * spans below a span) are read in two steps (export-statements.ts): their outline (row key, id,
 * parent, created_at: no stored text) by the parents' index, from which the writer orders them as
 * they are written; then their full rows, a bounded batch at a time in that order, by row key.
 * Memory holds one page's outline and one batch of rows, however many records lie below a root.
 */
import type { RecordFamily } from "../columns/standard-columns";
import { compileSearchQuery, type SearchScope } from "../search/compile-search-query";
import { resolveColumn } from "../search/search-columns";
import type { FilterLeaf, FilterNode, SearchQuery } from "../search/search-query";
import type { StoredRow } from "../search/shape-record";
import { type OutlineRow, outlineStatement, rowsStatement } from "./export-statements";

/** Roots per page: the outline of their descendants is held while the page is written. */
export const ROOT_PAGE_SIZE = 100;

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
 * start or from `start`. Each page's rows are yielded with the cursor after it; the
 * next is read only when the caller asks for it.
 */
export async function* keysetPages(
  source: ExportSource,
  query: SearchQuery,
  pageSize: number,
  start?: KeysetCursor,
): AsyncGenerator<{ rows: StoredRow[]; cursor: KeysetCursor }> {
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
    yield { rows, cursor: { after, tie } };
    // The statement reads pageSize + 1 rows (compileSearchQuery) and returns them unless its byte
    // budget cuts the page (`_rows_read` counts them before the cut). Fewer read, none cut: nothing
    // is left where it read. Past the tie (or from the start) that is the end, without the two
    // empty statements that would confirm it; within the tie, the walk goes on past the
    // created_at at once.
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

/** A descendant as the outline has it, with its family. */
export interface OutlineNode extends OutlineRow {
  family: "trace" | "span";
}

export interface Outline {
  /** Descendants by parent (a trace's session id, a span's parent id), oldest first, ties by id. */
  children: Map<string, OutlineNode[]>;
  /** Span roots only: the descendants that match the export's filter themselves. */
  matching: Set<string>;
}

async function readOutline(
  source: ExportSource,
  base: SearchQuery,
  family: "trace" | "span",
  by: "session_id" | "trace_id",
  parents: string[],
  matching?: FilterNode,
): Promise<OutlineNode[]> {
  const statement = outlineStatement(base, source.scope, family, by, parents, matching);
  // Admitted as the search of the same records would be (by parent, every field).
  const admitted = descendantQuery(base, family, inList(family, by, parents));
  const rows = await source.admit(admitted, async () => (await source.db.prepare(statement.sql).bind(...statement.params).all<OutlineRow>()).results);
  return rows.map((row) => ({ ...row, family }));
}

/**
 * The outline of the descendants of one page of roots: a session's traces and their spans, a
 * trace's spans, the spans of a span root's trace (those below it are its descendants).
 */
export async function outlineOf(source: ExportSource, base: SearchQuery, roots: readonly StoredRow[]): Promise<Outline> {
  const children = new Map<string, OutlineNode[]>();
  const matching = new Set<string>();
  const add = (node: OutlineNode) => {
    const key = String(node.parent);
    const list = children.get(key);
    if (list) list.push(node);
    else children.set(key, [node]);
  };
  if (roots.length === 0) return { children, matching };
  let traceIds: string[];
  if (base.family === "session") {
    const traces = await readOutline(source, base, "trace", "session_id", roots.map((r) => String(r.id)));
    for (const trace of traces) add(trace);
    traceIds = traces.map((t) => t.id);
  } else if (base.family === "trace") {
    traceIds = roots.map((r) => String(r.id));
  } else {
    traceIds = [...new Set(roots.map((r) => String(r.trace_id)))];
  }
  if (traceIds.length > 0) {
    const spans = await readOutline(source, base, "span", "trace_id", traceIds, base.family === "span" ? base.filter : undefined);
    for (const span of spans) {
      add(span);
      if (span.matching) matching.add(span.id);
    }
  }
  return { children, matching };
}

/** Descendant rows read per statement at most (and at most SEARCH_LIMITS.maxPageBytes of text). */
export const DESCENDANT_ROWS_PER_READ = 2000;

/** The full rows of outlined descendants, in the order given. */
export async function readRows(source: ExportSource, base: SearchQuery, nodes: readonly OutlineNode[]): Promise<StoredRow[]> {
  const families = [...new Set(nodes.map((n) => n.family))];
  const statement = rowsStatement(base, source.scope, families, nodes.map((n) => n.rid));
  return (await source.db.prepare(statement.sql).bind(...statement.params).all<StoredRow>()).results;
}
