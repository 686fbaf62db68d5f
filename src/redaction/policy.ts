/**
 * A project's redaction policy (contract section 14) and its compiled form: the matchers in
 * tie-break order (built-in detectors in the contract's order, then custom patterns in the
 * policy's order) and the fields they cover.
 */
import { customMatcher, type CustomPattern } from "./custom-patterns";
import { DETECTOR_NAMES, DETECTORS, type DetectorName } from "./detectors";
import type { Matcher } from "./mask-text";

export const REDACTION_FIELDS = ["input", "output", "user_metadata", "name", "tags"] as const;
export type RedactionField = (typeof REDACTION_FIELDS)[number];
export type RedactionMode = "mask" | "shadow";

export interface RedactionPolicy {
  enabled: boolean;
  mode: RedactionMode;
  detectors: DetectorName[];
  custom: CustomPattern[];
  fields: RedactionField[];
}

export const DEFAULT_POLICY: RedactionPolicy = {
  enabled: false,
  mode: "mask",
  detectors: [...DETECTOR_NAMES],
  custom: [],
  fields: ["input", "output", "user_metadata"],
};

export interface CompiledPolicy {
  mode: RedactionMode;
  matchers: Matcher[];
  fields: ReadonlySet<RedactionField>;
}

/** The policy ready to apply, or null when it changes nothing (disabled, or nothing to find or no field). */
export function compilePolicy(policy: RedactionPolicy): CompiledPolicy | null {
  if (!policy.enabled) return null;
  const chosen = new Set(policy.detectors);
  const matchers: Matcher[] = [...DETECTORS.filter((d) => chosen.has(d.name)), ...policy.custom.map(customMatcher)];
  if (matchers.length === 0 || policy.fields.length === 0) return null;
  return { mode: policy.mode, matchers, fields: new Set(policy.fields) };
}
