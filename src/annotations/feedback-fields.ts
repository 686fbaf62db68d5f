/**
 * The feedback fields put on records that were read with their ratings (RATINGS_COLUMN): the
 * searches with `include_all_feedback`, the full-record searches and the record lookups. The
 * project's live templates travel in the same read batch (feedbackTemplatesStatement).
 */
import { RATINGS_COLUMN, recordFeedback } from "./record-feedback";
import { definitionOf, listTemplatesStatement, type TemplateDefinition, type TemplateRow } from "./template-store";

export function feedbackTemplatesStatement(db: D1Database, projectId: string): D1PreparedStatement {
  return listTemplatesStatement(db, projectId, false);
}

function definitions(result: D1Result | undefined): Map<string, TemplateDefinition> {
  return new Map(((result?.results ?? []) as TemplateRow[]).map((row) => [row.id, definitionOf(row)]));
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Sets the feedback fields of each record from the row it was shaped from (same order). A
 * `feedback_rating_info` the record was ingested with (the SDK may send one) is kept, with the
 * caller's own ratings added by template id.
 */
export function withFeedback(records: Record<string, unknown>[], rows: readonly Record<string, unknown>[], templates: D1Result | undefined, callerId: string): void {
  const byId = definitions(templates);
  records.forEach((record, i) => {
    const stored = record.feedback_rating_info;
    const feedback = recordFeedback(rows[i]?.[RATINGS_COLUMN], byId, callerId);
    Object.assign(record, feedback, { feedback_rating_info: { ...(isObject(stored) ? stored : {}), ...feedback.feedback_rating_info } });
  });
}
