/**
 * Nearest-rank percentiles, the one rule every metrics read and the pre-aggregates' refresh
 * follow: percentile p (an integer 1..99) of n values is the value at rank ceil(p x n / 100).
 */

/** The rank of percentile `p` among `n` values. */
export const nearestRank = (p: number, n: number): number => Math.floor((Math.round(p) * n + 99) / 100);

/** The same rank in SQL, over the count expression `n` (SQLite's integer division). */
export const nearestRankSql = (p: number, n: string): string => `(${Math.round(p)} * ${n} + 99) / 100`;
