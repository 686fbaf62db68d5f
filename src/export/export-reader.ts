/**
 * Reads an export a page at a time, by keyset: each page continues from the last record of the
 * one before (its sort value and id), where an offset would walk every earlier record again.
 * The pages are the search's statements (src/search), keyset included (SearchQuery.after): the
 * same filter compiler, sort plans, tenancy guard, access paths and scan classification, so the
 * order is the search's with the same sort (NULLs last, ties by id in the sort's direction).
 * Where the sort has an index (created_at, id, a metric, a side table's driver) the keyset is a
 * range of it and page N costs what page 1 costs; otherwise each page sorts the matches after
 * the keyset (docs/export.md, "Order").
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
import type { FilterLeaf, FilterNode, SearchQuery, SortKeyset } from "../search/search-query";
import type { StoredRow } from "../search/shape-record";
import { pageOrder } from "../search/merge-shard-pages";
import { type OutlineRow, outlineStatement, rowsStatement } from "./export-statements";

/** Roots per page: the outline of their descendants is held while the page is written. */
export const ROOT_PAGE_SIZE = 100;

export interface ExportSource {
  /** The project's own shard. */
  db: D1Database;
  /**
   * The other shards holding a partition of the project (contract section 13; absent or empty:
   * one shard, read as before). Their pages are merged with the home shard's in the export's
   * order (mergedKeysetPages), and a root's descendants are read on its own shard: a root's whole
   * tree lives in one partition.
   */
  others?: D1Database[];
  scope: SearchScope;
  /** Runs one page's statement (admitted by its scan class by the caller). */
  admit: <T>(query: SearchQuery, work: () => Promise<T>) => Promise<T>;
}

const column = (id: string, family: RecordFamily) => {
  const resolved = resolveColumn(id, family);
  if (!resolved.ok) throw new Error(`export: column ${id} does not resolve for ${family}`);
  return resolved.ref;
};

const leaf = (l: FilterLeaf): FilterNode => ({ kind: "leaf", leaf: l });

/**
 * Where a keyset walk stands after a page: past `after` (its sort value and id) in the query's
 * order. Plain JSON: a queued export stores it between queue messages and continues from it.
 */
export interface KeysetCursor {
  after: SortKeyset;
}

/**
 * The keyset of a stored cursor. A job queued before sorted exports stored `{after: {createdAt,
 * id}, tie: true}` (within that created_at, past that id): the same place in the created_at order.
 */
function keysetOf(cursor: KeysetCursor | { after: { createdAt: number; id: string } }): SortKeyset {
  const after = cursor.after as Partial<SortKeyset> & { createdAt?: number; id: string };
  return after.createdAt !== undefined && !("value" in after) ? { value: after.createdAt, id: after.id } : { value: after.value ?? null, id: after.id };
}

async function readPage(source: ExportSource, query: SearchQuery, db: D1Database = source.db): Promise<StoredRow[]> {
  const statement = compileSearchQuery(query, source.scope);
  return source.admit(query, async () => (await db.prepare(statement.sql).bind(...statement.params).all<StoredRow>()).results);
}

/** Every database of the source: the home shard's first (index 0), then the others (a row's `_shard`). */
const databasesOf = (source: ExportSource): D1Database[] => [source.db, ...(source.others ?? [])];

/** The shard a root row or outline node was read on (its index in databasesOf). */
export const shardOf = (row: { _shard?: unknown }): number => Number(row._shard ?? 0);

/** A stored row's key across shards (rids are per database). */
export const rowKeyOf = (shard: number, rid: number): string => `${shard}:${rid}`;

/**
 * keysetPages over several shards: each shard's rows after the cursor, read a page at a time as
 * its buffer empties, merged in the statement's order (pageOrder: as one database orders them, the
 * id breaking ties). A row is handed out only when every shard that may hold more has its next row
 * at hand, so the pages are exactly one database's pages, and the cursor after a page (a keyset of
 * the global order) continues on every shard. Each shard's row is read once; memory holds a page
 * per shard.
 */
async function* mergedKeysetPages(source: ExportSource, query: SearchQuery, pageSize: number, start?: KeysetCursor): AsyncGenerator<{ rows: StoredRow[]; cursor: KeysetCursor }> {
  const order = pageOrder(query);
  const first = start ? keysetOf(start) : null;
  const shards = databasesOf(source).map((db) => ({ db, rows: [] as StoredRow[], after: first, done: false }));
  const refill = async (index: number) => {
    const shard = shards[index]!;
    const rows = await readPage(source, { ...query, limit: pageSize, offset: 0, after: shard.after }, shard.db);
    for (const row of rows) row._shard = index;
    const read = Number(rows[0]?._rows_read ?? rows.length);
    shard.rows = rows;
    shard.done = rows.length === 0 || (read <= pageSize && rows.length === read);
    const last = rows[rows.length - 1];
    if (last) shard.after = { value: (last.sort_value as string | number | null | undefined) ?? null, id: String(last.id) };
  };
  for (;;) {
    const page: StoredRow[] = [];
    while (page.length < pageSize) {
      const empty = shards.flatMap((shard, i) => (shard.rows.length === 0 && !shard.done ? [i] : []));
      if (empty.length > 0) await Promise.all(empty.map(refill));
      let best = -1;
      for (let i = 0; i < shards.length; i += 1) {
        const head = shards[i]!.rows[0];
        if (head && (best < 0 || order(head, shards[best]!.rows[0]!) < 0)) best = i;
      }
      if (best < 0) break;
      page.push(shards[best]!.rows.shift()!);
    }
    if (page.length === 0) return;
    const last = page[page.length - 1]!;
    yield { rows: page, cursor: { after: { value: (last.sort_value as string | number | null | undefined) ?? null, id: String(last.id) } } };
    if (page.length < pageSize) return;
  }
}

/**
 * Every record of `query` (its filter, its sort), page after page of `pageSize`, from the start
 * or from `start`. Each page's rows are yielded with the cursor after it; the next is read only
 * when the caller asks for it.
 */
export async function* keysetPages(
  source: ExportSource,
  query: SearchQuery,
  pageSize: number,
  start?: KeysetCursor,
): AsyncGenerator<{ rows: StoredRow[]; cursor: KeysetCursor }> {
  if ((source.others?.length ?? 0) > 0) {
    yield* mergedKeysetPages(source, query, pageSize, start);
    return;
  }
  let after: SortKeyset | null = start ? keysetOf(start) : null;
  for (;;) {
    const rows = await readPage(source, { ...query, limit: pageSize, offset: 0, after });
    if (rows.length === 0) return;
    const last = rows[rows.length - 1]!;
    // sort_value: the value the page was ordered by (null: a record without one, sorted last).
    const value = last.sort_value as string | number | null | undefined;
    after = { value: value ?? null, id: String(last.id) };
    yield { rows, cursor: { after } };
    // The statement reads pageSize + 1 rows (compileSearchQuery) and returns them unless its byte
    // budget cuts the page (`_rows_read` counts them before the cut). Fewer read, none cut:
    // nothing follows, without the empty statement that would confirm it.
    const read = Number(rows[0]!._rows_read ?? rows.length);
    if (read <= pageSize && rows.length === read) return;
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
  /** The shard it was read on (its root's: index in the source's databases). */
  shard: number;
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
  shard = 0,
): Promise<OutlineNode[]> {
  const statement = outlineStatement(base, source.scope, family, by, parents, matching);
  // Admitted as the search of the same records would be (by parent, every field).
  const admitted = descendantQuery(base, family, inList(family, by, parents));
  const db = databasesOf(source)[shard]!;
  const rows = await source.admit(admitted, async () => (await db.prepare(statement.sql).bind(...statement.params).all<OutlineRow>()).results);
  return rows.map((row) => ({ ...row, family, shard }));
}

/**
 * The outline of the descendants of one page of roots: a session's traces and their spans, a
 * trace's spans, the spans of a span root's trace (those below it are its descendants).
 */
export async function outlineOf(source: ExportSource, base: SearchQuery, roots: readonly StoredRow[]): Promise<Outline> {
  if ((source.others?.length ?? 0) === 0) return shardOutline(source, base, roots, 0);
  // Each root's tree is on the root's own shard: the outline of each shard's roots, read in parallel.
  const byShard = new Map<number, StoredRow[]>();
  for (const root of roots) byShard.set(shardOf(root), [...(byShard.get(shardOf(root)) ?? []), root]);
  const parts = await Promise.all([...byShard].map(([shard, own]) => shardOutline(source, base, own, shard)));
  const children = new Map<string, OutlineNode[]>();
  const matching = new Set<string>();
  for (const part of parts) {
    for (const [parent, nodes] of part.children) children.set(parent, [...(children.get(parent) ?? []), ...nodes]);
    for (const id of part.matching) matching.add(id);
  }
  return { children, matching };
}

async function shardOutline(source: ExportSource, base: SearchQuery, roots: readonly StoredRow[], shard: number): Promise<Outline> {
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
    const traces = await readOutline(source, base, "trace", "session_id", roots.map((r) => String(r.id)), undefined, shard);
    for (const trace of traces) add(trace);
    traceIds = traces.map((t) => t.id);
  } else if (base.family === "trace") {
    traceIds = roots.map((r) => String(r.id));
  } else {
    traceIds = [...new Set(roots.map((r) => String(r.trace_id)))];
  }
  if (traceIds.length > 0) {
    const spans = await readOutline(source, base, "span", "trace_id", traceIds, base.family === "span" ? base.filter : undefined, shard);
    for (const span of spans) {
      add(span);
      if (span.matching) matching.add(span.id);
    }
  }
  return { children, matching };
}

/** Descendant rows read per statement at most (and at most SEARCH_LIMITS.maxPageBytes of text). */
export const DESCENDANT_ROWS_PER_READ = 2000;

/** The full rows of outlined descendants (each tagged with its shard, `_shard`), each shard's in the order given. */
export async function readRows(source: ExportSource, base: SearchQuery, nodes: readonly OutlineNode[]): Promise<StoredRow[]> {
  const byShard = new Map<number, OutlineNode[]>();
  for (const node of nodes) byShard.set(node.shard, [...(byShard.get(node.shard) ?? []), node]);
  const databases = databasesOf(source);
  const parts = await Promise.all(
    [...byShard].map(async ([shard, own]) => {
      const families = [...new Set(own.map((n) => n.family))];
      const statement = rowsStatement(base, source.scope, families, own.map((n) => n.rid));
      const rows = (await databases[shard]!.prepare(statement.sql).bind(...statement.params).all<StoredRow>()).results;
      for (const row of rows) row._shard = shard;
      return rows;
    }),
  );
  return parts.flat();
}
