/**
 * The standard columns of the interface (seed, section 2.5), in its order. This table is the one
 * place they are described: the available-columns answer, search validation (which filter types
 * and kinds a column accepts) and the SQL (which stored column holds it) all read it.
 */

export const RECORD_KINDS = ["control", "trace", "tool", "retriever", "session", "workflow", "llm", "agent"] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];

export const SPAN_KINDS = ["agent", "workflow", "llm", "tool", "retriever", "control"] as const;
export type SpanKind = (typeof SPAN_KINDS)[number];

/** The three searchable families: one search route and one stored `record_type` each. */
export type RecordFamily = "session" | "trace" | "span";

export function familyOf(kind: string): RecordFamily {
  return kind === "session" || kind === "trace" ? kind : "span";
}

export type DataType = "text" | "timestamp" | "string_list" | "integer" | "uuid" | "boolean" | "floating_point";
export type FilterType = "text" | "date" | "collection" | "number" | "id" | "boolean";

export interface StandardColumn {
  id: string;
  label: string;
  description: string;
  data_type: DataType;
  filter_type: FilterType;
  is_optional: boolean;
  sortable: boolean;
  multi_valued: boolean;
  applicable_types: readonly RecordKind[];
  allowed_values?: readonly string[];
  /** The `records` column that stores it (tags also have the `record_tags` side table). */
  storage: string;
}

const ALL: readonly RecordKind[] = RECORD_KINDS;
const NOT_SESSION: readonly RecordKind[] = ["control", "trace", "tool", "retriever", "workflow", "llm", "agent"];
const SPANS: readonly RecordKind[] = ["control", "tool", "retriever", "workflow", "llm", "agent"];

type ColumnSpec = [
  id: string,
  label: string,
  description: string,
  dataType: DataType,
  filterType: FilterType,
  isOptional: boolean,
  applicableTypes: readonly RecordKind[],
  extra?: Partial<Pick<StandardColumn, "sortable" | "multi_valued" | "allowed_values" | "storage">>,
];

const SPECS: ColumnSpec[] = [
  ["input", "Input", "Input to the record.", "text", "text", false, ALL],
  ["output", "Output", "Output of the record.", "text", "text", false, ALL],
  ["name", "Name", "Name of the record.", "text", "text", false, ALL],
  ["created_at", "Created", "Time the record was created.", "timestamp", "date", false, ALL],
  ["external_id", "External ID", "User-provided id of the record.", "text", "text", true, ALL],
  ["id", "ID", "Id of the record.", "uuid", "id", false, ALL],
  ["progress_message", "Progress Message", "Progress message of the record.", "text", "text", false, ALL],
  ["error_message", "Error Message", "Error message of the record.", "text", "text", false, ALL],
  ["tags", "Tags", "Tags of the record.", "string_list", "collection", false, NOT_SESSION, { sortable: false, multi_valued: true }],
  ["status_code", "Status Code", "Status code of the record: a failure or error state.", "integer", "number", true, NOT_SESSION],
  ["dataset_input", "Dataset Input", "Input of the dataset row the record was produced from.", "text", "text", false, NOT_SESSION],
  ["dataset_output", "Dataset Output", "Expected output of the dataset row.", "text", "text", false, NOT_SESSION],
  ["session_id", "Session ID", "Id of the session; for a trace, the session that contains it.", "uuid", "id", false, NOT_SESSION],
  ["project_id", "Project ID", "Id of the project.", "uuid", "id", false, NOT_SESSION],
  ["run_id", "Run ID", "Id of the run: log stream or experiment.", "uuid", "id", false, NOT_SESSION],
  ["updated_at", "Updated", "Time the record was last updated.", "timestamp", "date", true, NOT_SESSION],
  ["has_children", "Has Children", "Whether the record has child records.", "boolean", "boolean", true, NOT_SESSION],
  ["is_complete", "Is Complete", "Whether the parent trace is complete.", "boolean", "boolean", false, NOT_SESSION],
  ["type", "Type", "Kind of the record.", "text", "text", false, SPANS, { allowed_values: ["control", "trace", "agent", "tool", "session", "workflow", "llm", "retriever"] }],
  ["trace_id", "Trace ID", "Id of the trace the span belongs to.", "uuid", "id", false, SPANS],
  ["parent_id", "Parent ID", "Id of the parent of the span.", "uuid", "id", false, SPANS],
  ["step_number", "Step Number", "Topological step number of the span.", "integer", "number", true, SPANS],
  ["agent_type", "Agent Type", "Type of the agent.", "text", "text", false, ["agent"], { allowed_values: ["judge", "router", "supervisor", "planner", "react", "reflection", "classifier", "default"] }],
  ["tools", "Tools", "Tools passed to the model.", "text", "text", false, ["llm"]],
  ["model", "Model", "Model used.", "text", "text", true, ["llm"]],
  ["temperature", "Temperature", "Sampling temperature.", "floating_point", "number", true, ["llm"]],
  ["finish_reason", "Finish Reason", "Why the model stopped.", "text", "text", true, ["llm"]],
  ["tool_call_id", "Tool Call ID", "Id of the tool call.", "text", "text", true, ["tool"]],
  ["control_id", "Control ID", "Identifier of the control definition.", "integer", "number", true, ["control"]],
  ["agent_name", "Agent Name", "Name of the agent the control applies to.", "text", "text", true, ["control"]],
  ["check_stage", "Check Stage", "Stage of the check.", "text", "text", true, ["control"], { allowed_values: ["pre", "post"] }],
  ["applies_to", "Applies To", "What the control applies to.", "text", "text", true, ["control"], { allowed_values: ["tool_call", "llm_call"] }],
  ["evaluator_name", "Evaluator Name", "Representative evaluator of the control span.", "text", "text", true, ["control"]],
  ["selector_path", "Selector Path", "Representative selector path of the control span.", "text", "text", true, ["control"]],
];

export const STANDARD_COLUMNS: readonly StandardColumn[] = SPECS.map(
  ([id, label, description, data_type, filter_type, is_optional, applicable_types, extra = {}]) => ({
    id,
    label,
    description,
    data_type,
    filter_type,
    is_optional,
    sortable: extra.sortable ?? true,
    multi_valued: extra.multi_valued ?? false,
    applicable_types,
    ...(extra.allowed_values ? { allowed_values: extra.allowed_values } : {}),
    storage: extra.storage ?? id,
  }),
);

export const STANDARD_COLUMNS_BY_ID: ReadonlyMap<string, StandardColumn> = new Map(STANDARD_COLUMNS.map((c) => [c.id, c]));

/** The record kinds one search route returns. */
export const KINDS_OF_FAMILY: Record<RecordFamily, readonly RecordKind[]> = {
  session: ["session"],
  trace: ["trace"],
  span: SPAN_KINDS,
};

/** Whether a column applies to at least one kind that the family's route returns. */
export function appliesToFamily(column: Pick<StandardColumn, "applicable_types">, family: RecordFamily): boolean {
  return KINDS_OF_FAMILY[family].some((kind) => column.applicable_types.includes(kind));
}

export function standardColumnsOf(family: RecordFamily): StandardColumn[] {
  return STANDARD_COLUMNS.filter((c) => appliesToFamily(c, family));
}
