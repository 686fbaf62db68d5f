/**
 * Custom patterns of a policy (contract section 14): ECMAScript syntax, flags from `i`, `m`, `s`,
 * `u`, at most 500 characters. They run on RE2JS, a linear-time engine (a port of RE2: an
 * automaton, never backtracking), so no pattern can backtrack catastrophically, whatever it
 * nests; the price is that backreferences and lookaround, which no automaton can run, are
 * refused with a 422 that says so. Measured in test/redaction-bounds.test.ts.
 */
import { RE2JS } from "re2js";
import type { Span } from "./detectors";
import type { Matcher } from "./mask-text";

export const MAX_PATTERN_CHARS = 500;
export const CUSTOM_FLAGS = ["i", "m", "s", "u"] as const;

export interface CustomPattern {
  name: string;
  pattern: string;
  flags?: string | null;
}

/** Why a custom pattern is refused, or null when it compiles. */
export function customPatternFault(custom: CustomPattern): string | null {
  if (custom.pattern.length === 0) return "the pattern is empty";
  if (custom.pattern.length > MAX_PATTERN_CHARS) return `the pattern has ${custom.pattern.length} characters; at most ${MAX_PATTERN_CHARS} are allowed`;
  const flags = custom.flags ?? "";
  for (const f of flags) {
    if (!(CUSTOM_FLAGS as readonly string[]).includes(f)) return `flag "${f}" is not supported: flags are any of i, m, s, u`;
  }
  if (new Set(flags).size !== flags.length) return "a flag is repeated";
  // Checked before compiling: RE2JS's translation would read `\k<name>` as a literal `k`, a
  // silently different pattern.
  if (hasBackreference(custom.pattern)) return refusalOf("\\1", null);
  try {
    compile(custom);
    return null;
  } catch (error) {
    return refusalOf(custom.pattern, error);
  }
}

/** Whether the pattern holds `\1`-`\9` or `\k<`, outside escaped backslashes. */
function hasBackreference(pattern: string): boolean {
  for (let i = 0; i < pattern.length - 1; i++) {
    if (pattern[i] !== "\\") continue;
    const next = pattern[i + 1]!;
    if ((next >= "1" && next <= "9") || (next === "k" && pattern[i + 2] === "<")) return true;
    i++; // the escaped character
  }
  return false;
}

/** A plain-language reason for an RE2 syntax error, naming the two features it cannot run. */
function refusalOf(pattern: string, error: unknown): string {
  const linear = "custom patterns run on a linear-time engine (RE2), which cannot";
  if (/\(\?<?[=!]/.test(pattern)) return `lookaround ((?=, (?!, (?<=, (?<!) is not supported: ${linear} run it in bounded time`;
  if (/\\[1-9]|\\k</.test(pattern)) return `backreferences (\\1, \\k<name>) are not supported: ${linear} run them in bounded time`;
  const message = error instanceof Error ? error.message : String(error);
  return `the pattern is not a valid regular expression (${message.replace(/^error parsing regexp: /, "")})`;
}

function compile(custom: CustomPattern): RE2JS {
  const flags = custom.flags ?? "";
  let re2Flags = 0;
  if (flags.includes("i")) re2Flags |= RE2JS.CASE_INSENSITIVE;
  if (flags.includes("m")) re2Flags |= RE2JS.MULTILINE;
  if (flags.includes("s")) re2Flags |= RE2JS.DOTALL;
  // `u` changes nothing: RE2 always reads the text as code points.
  return RE2JS.compile(RE2JS.translateRegExp(custom.pattern), re2Flags);
}

/** A compiled custom pattern; the pattern must have passed customPatternFault. */
export function customMatcher(custom: CustomPattern): Matcher {
  const re = compile(custom);
  return {
    name: custom.name,
    mayMatch: () => true,
    find: (text: string, out: Span[]) => {
      const m = re.matcher(text);
      while (m.find()) {
        const start = m.start();
        const end = m.end();
        if (end > start) out.push([start, end]);
      }
    },
  };
}
