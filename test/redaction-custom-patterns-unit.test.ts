/**
 * Custom patterns (contract section 14): ECMAScript syntax on a linear-time engine (RE2JS),
 * flags i, m, s, u, what is refused and why, and placeholders at the right offsets in any text.
 */
import { describe, expect, it } from "vitest";
import { customMatcher, customPatternFault } from "../src/redaction/custom-patterns";
import { maskText } from "../src/redaction/mask-text";

const mask = (text: string, pattern: string, flags?: string) => maskText(text, [customMatcher({ name: "c", pattern, flags })]);

describe("custom patterns", () => {
  it("refuses what an automaton cannot run, saying so, and malformed or oversized patterns", () => {
    expect(customPatternFault({ name: "c", pattern: "(a)\\1" })).toMatch(/^backreferences .* linear-time engine/);
    expect(customPatternFault({ name: "c", pattern: "(?<n>a)\\k<n>" })).toMatch(/^backreferences/);
    for (const p of ["a(?=b)", "a(?!b)", "(?<=a)b", "(?<!a)b"]) expect(customPatternFault({ name: "c", pattern: p })).toMatch(/^lookaround/);
    expect(customPatternFault({ name: "c", pattern: "(unclosed" })).toMatch(/not a valid regular expression/);
    expect(customPatternFault({ name: "c", pattern: "a".repeat(501) })).toMatch(/at most 500/);
    expect(customPatternFault({ name: "c", pattern: "a", flags: "g" })).toMatch(/flag "g"/);
    expect(customPatternFault({ name: "c", pattern: "a", flags: "ii" })).toMatch(/repeated/);
  });

  it("accepts nested quantifiers, which cannot backtrack on this engine, and matches them", () => {
    expect(customPatternFault({ name: "c", pattern: "(a+)+b" })).toBeNull();
    expect(mask("xx aaab yy", "(a+)+b")).toBe("xx [REDACTED:c] yy");
    // The classic catastrophic input: no match, and an answer (no hang).
    expect(mask(`${"a".repeat(100_000)}!`, "(a+)+b")).toBe(`${"a".repeat(100_000)}!`);
  });

  it("honours the flags i, m and s", () => {
    expect(mask("EMP-123456 emp-654321", "emp-\\d{6}")).toBe("EMP-123456 [REDACTED:c]");
    expect(mask("EMP-123456 emp-654321", "emp-\\d{6}", "i")).toBe("[REDACTED:c] [REDACTED:c]");
    expect(mask("a\nsecret\nb", "^secret$")).toBe("a\nsecret\nb");
    expect(mask("a\nsecret\nb", "^secret$", "m")).toBe("a\n[REDACTED:c]\nb");
    expect(mask("BEGIN x\ny END", "BEGIN.*END")).toBe("BEGIN x\ny END");
    expect(mask("BEGIN x\ny END", "BEGIN.*END", "s")).toBe("[REDACTED:c]");
  });

  it("places the placeholder right after astral characters, and ignores empty matches", () => {
    expect(mask("😀é secret-42 ✓", "secret-\\d+", "u")).toBe("😀é [REDACTED:c] ✓");
    expect(mask("abc", "x*")).toBe("abc");
  });
});
