/**
 * Searches never show expired records (docs/retention.md): for a project with a retention, the
 * query gets one more top-level conjunct, `created_at >= cut-off`. The compiler turns top-level
 * created_at comparisons into the range of the index it walks (compile-search-query.ts), so the
 * plan stays an index walk, and the retention comes with the project's cached route: no extra
 * round trip. Expired records stay hidden until the hourly expiry erases them.
 */
import { retentionCutoffMicros } from "../retention/retention-policy";
import { resolveColumn } from "./search-columns";
import type { SearchQuery } from "./search-query";

export function withinRetention(query: SearchQuery, retentionDays: number | null, nowMicros: number): SearchQuery {
  const cutoff = retentionCutoffMicros(retentionDays, nowMicros);
  if (cutoff === null) return query;
  const resolved = resolveColumn("created_at", query.family);
  if (!resolved.ok) throw new Error("created_at is not a search column");
  const window = { kind: "leaf" as const, leaf: { kind: "compare" as const, column: resolved.ref, operator: "gte" as const, value: cutoff, caseSensitive: true } };
  const conjuncts = query.filter.kind === "and" ? query.filter.children : [query.filter];
  return { ...query, filter: { kind: "and", children: [window, ...conjuncts] } };
}
