/**
 * Masking one string: every detector and custom pattern of a policy finds its regions; where
 * regions overlap, the longest wins, then the one listed first (built-in detectors in the
 * contract's order, then custom patterns in the policy's order); each region kept is replaced by
 * `[REDACTED:<name>]` (contract section 14).
 */
import type { Detector, Span } from "./detectors";

/** Something that finds regions: a built-in detector or a compiled custom pattern. */
export interface Matcher {
  name: string;
  mayMatch: (text: string) => boolean;
  find: (text: string, out: Span[]) => void;
}

export type { Detector };

interface Candidate {
  start: number;
  end: number;
  rank: number;
}

export const placeholder = (name: string) => `[REDACTED:${name}]`;

/**
 * The text with every kept region replaced, or the text itself (same string) when nothing
 * matched, so callers can tell "changed" by identity.
 */
export function maskText(text: string, matchers: readonly Matcher[]): string {
  if (text.length < 3) return text;
  const candidates: Candidate[] = [];
  const found: Span[] = [];
  for (let rank = 0; rank < matchers.length; rank++) {
    const matcher = matchers[rank]!;
    if (!matcher.mayMatch(text)) continue;
    found.length = 0;
    matcher.find(text, found);
    for (const [start, end] of found) if (end > start) candidates.push({ start, end, rank });
  }
  if (candidates.length === 0) return text;
  // Longest first, then the matcher listed first, then leftmost: greedy acceptance of
  // non-overlapping regions in that order.
  candidates.sort((a, b) => b.end - b.start - (a.end - a.start) || a.rank - b.rank || a.start - b.start);
  // Occupancy by position: each matcher's own regions do not overlap, so the checks cost at most
  // the text's length per matcher (a list of kept regions would be quadratic in their count).
  const taken = new Uint8Array(text.length);
  const kept: Candidate[] = [];
  for (const c of candidates) {
    let free = true;
    for (let i = c.start; i < c.end; i++) {
      if (taken[i]) {
        free = false;
        break;
      }
    }
    if (!free) continue;
    taken.fill(1, c.start, c.end);
    kept.push(c);
  }
  kept.sort((a, b) => a.start - b.start);
  let out = "";
  let at = 0;
  for (const k of kept) {
    out += text.slice(at, k.start) + placeholder(matchers[k.rank]!.name);
    at = k.end;
  }
  return out + text.slice(at);
}
