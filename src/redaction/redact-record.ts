/**
 * A compiled policy applied to a record row or a held update before anything is written
 * (contract section 14). In `mask` mode the covered fields are replaced by their masked text, so
 * the original never reaches a table, the text index (built from the row by triggers), a held
 * update or an export. In `shadow` mode the row keeps what was sent and the masked copies go to
 * `redacted_input`/`redacted_output`, unless the client sent its own, which wins.
 *
 * Rows are typed structurally, so this capability does not import the ingest code it serves.
 */
import { maskString, maskStored, maskValue } from "./mask-values";
import type { CompiledPolicy } from "./policy";

/** The columns of a `records` row that redaction reads or writes. */
export interface RedactableRecord {
  name: string;
  input: string | null;
  input_is_json: 0 | 1;
  output: string | null;
  output_is_json: 0 | 1;
  redacted_input: string | null;
  redacted_output: string | null;
  user_metadata: string;
  tags: string;
}

/** The columns of a held update (`record_patches`) that redaction reads or writes. */
export interface RedactablePatch {
  input: string | null;
  input_is_json: 0 | 1 | null;
  output: string | null;
  output_is_json: 0 | 1 | null;
  tags: string | null;
  redacted_input?: string | null;
  redacted_output?: string | null;
}

/** A JSON text (object or array) with its string values masked; the same text when unchanged. */
function maskJsonText(text: string, policy: CompiledPolicy): string {
  if (text === "{}" || text === "[]") return text;
  const parsed = JSON.parse(text) as unknown;
  const masked = maskValue(parsed, policy.matchers, 1);
  return masked === parsed ? text : JSON.stringify(masked);
}

/**
 * The masked copy as `redacted_input`/`redacted_output` are stored: always JSON text (a plain
 * string as a JSON string), as the row builders store a client's own copy.
 */
function redactedCopy(text: string, isJson: boolean, policy: CompiledPolicy): string {
  const masked = maskStored(text, isJson, policy.matchers)!;
  return isJson ? masked : JSON.stringify(masked);
}

/** Masks (or shadows) the record's covered fields in place. */
export function redactRecord(row: RedactableRecord, policy: CompiledPolicy): void {
  const { fields, matchers } = policy;
  if (policy.mode === "shadow") {
    if (fields.has("input") && row.input !== null && row.redacted_input === null) {
      row.redacted_input = redactedCopy(row.input, row.input_is_json === 1, policy);
    }
    if (fields.has("output") && row.output !== null && row.redacted_output === null) {
      row.redacted_output = redactedCopy(row.output, row.output_is_json === 1, policy);
    }
    return;
  }
  if (fields.has("input")) {
    row.input = maskStored(row.input, row.input_is_json === 1, matchers);
    // A client's own redacted copy is masked too: in mask mode nothing unmasked is stored.
    if (row.redacted_input !== null) row.redacted_input = maskStored(row.redacted_input, true, matchers);
  }
  if (fields.has("output")) {
    row.output = maskStored(row.output, row.output_is_json === 1, matchers);
    if (row.redacted_output !== null) row.redacted_output = maskStored(row.redacted_output, true, matchers);
  }
  if (fields.has("user_metadata")) row.user_metadata = maskJsonText(row.user_metadata, policy);
  if (fields.has("tags")) row.tags = maskJsonText(row.tags, policy);
  if (fields.has("name") && row.name !== "") row.name = maskString(row.name, matchers);
}

/** Masks (or shadows) a streaming update in place, with the record's rules. */
export function redactPatch(patch: RedactablePatch, policy: CompiledPolicy): void {
  const { fields, matchers } = policy;
  if (policy.mode === "shadow") {
    if (fields.has("input") && patch.input !== null) patch.redacted_input = redactedCopy(patch.input, patch.input_is_json === 1, policy);
    if (fields.has("output") && patch.output !== null) patch.redacted_output = redactedCopy(patch.output, patch.output_is_json === 1, policy);
    return;
  }
  if (fields.has("input")) patch.input = maskStored(patch.input, patch.input_is_json === 1, matchers);
  if (fields.has("output")) patch.output = maskStored(patch.output, patch.output_is_json === 1, matchers);
  if (fields.has("tags") && patch.tags !== null) patch.tags = maskJsonText(patch.tags, policy);
}
