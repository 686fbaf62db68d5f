/**
 * The one table of request-body caps (docs/limits.md). A body over its route's
 * cap is a 413 naming the cap, answered before anything of the body is parsed: a declared
 * `Content-Length` over the cap is refused without reading a byte, and a body without one is
 * counted as it streams in and refused as soon as the count passes the cap.
 *
 * Nothing of a protected route's body is read before its caller is authenticated (credentials
 * travel in headers), so an unauthenticated client can make the worker read at most the small
 * cap of the public routes (login).
 *
 * A new route with a body gets its cap by one line here, keyed by its method and its path as the
 * OpenAPI document names it. A route missing from the table gets DEFAULT_BODY_LIMIT, the small
 * cap (test/body-limits.test.ts fails for a documented route that is missing).
 */
const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * A cap is bytes and JSON values (json-shape.ts): bytes bound the reading, values bound what
 * parsing and validating build (a value costs a parser tens of bytes whatever its size, so 10 MiB
 * of `{}` is 3.5 million objects, about 500 MB). The value count is checked on the raw bytes,
 * before the body is parsed, and before any per-record cap (docs/limits.md "Request bodies").
 */
interface Cap {
  bytes: number;
  values: number;
}

/** For a route with a body that the table does not list: as small as a login. */
export const DEFAULT_BODY_LIMIT = 16 * KiB;
const DEFAULT_CAP: Cap = { bytes: DEFAULT_BODY_LIMIT, values: 1_000 };

/** Login forms and API-key exchanges: read before the caller is known. */
const LOGIN: Cap = { bytes: 16 * KiB, values: 1_000 };
/** Names and run selectors (projects, runs, columns, deletion by one key/value). */
const SMALL: Cap = { bytes: 64 * KiB, values: 10_000 };
/**
 * A search body: up to 1 MB of filter values (SEARCH_LIMITS.maxFilterValuesBytes) plus up to
 * 500 selected column ids; 2 MiB leaves every documented search limit reachable.
 */
const SEARCH: Cap = { bytes: 2 * MiB, values: 50_000 };
/**
 * A redaction preview: a sample text of up to 100,000 characters (up to 400 KB as UTF-8) and the
 * policy to try on it.
 */
const REDACTION_PREVIEW: Cap = { bytes: 512 * KiB, values: 10_000 };
/**
 * Ingestion (batch and streaming): a record may hold up to 1.9 MB (RECORD_LIMITS.maxRecordBytes),
 * so a batch of a few large records must fit. A 9.3 MiB batch of 10,000 records (the most one
 * request may carry) holds about 55-70 MB live while it is decoded, parsed, validated and turned
 * into rows (measured in V8, docs/limits.md): half of an isolate's 128 MB. 300,000 values hold
 * 10,000 records as the galileo SDK writes them (about 20 values each) with room for metadata and
 * messages; 300,000 empty objects are about 20 MB once parsed.
 */
const INGEST: Cap = { bytes: 10 * MiB, values: 300_000 };
/**
 * OTLP/JSON spells each attribute as `{"key": ..., "value": {"stringValue": ...}}` (three values),
 * so a 10,000-span export needs more values than an ingest batch; the protobuf encoding is counted
 * by its own pre-scan (src/otlp/wire-counts.ts) against the same caps of OTLP_LIMITS.
 */
const OTLP: Cap = { bytes: 10 * MiB, values: 500_000 };
/**
 * An annotation template: a choice tree may hold 50 choices a level over 10 levels of 255-character
 * labels; real ones are a few KB. Ratings in bulk: up to 1,000 trace ids (37 KB) and 50
 * operations, whose values are at most 100 tags each.
 */
const ANNOTATION: Cap = { bytes: 256 * KiB, values: 50_000 };
const ANNOTATION_BULK: Cap = { bytes: 1 * MiB, values: 20_000 };
/** A queue with its annotators' emails, or users given roles: up to 1,000 users of 320-byte emails. */
const QUEUE_USERS: Cap = { bytes: 512 * KiB, values: 6_000 };
/**
 * Records added to or removed from a queue: up to 100,000 ids of 39 bytes each as JSON (3.7 MiB)
 * and a few values around them; or a filter tree, which the search's cap already bounds.
 */
const QUEUE_RECORDS: Cap = { bytes: 4 * MiB + 64 * KiB, values: 100_000 + 1_000 };

const ROUTE_BODY_LIMITS: ReadonlyMap<string, Cap> = new Map([
  ["POST /login", LOGIN],
  ["POST /v2/login", LOGIN],
  ["POST /login/api_key", LOGIN],
  ["POST /v2/login/api_key", LOGIN],
  ["POST /v2/projects", SMALL],
  ["PATCH /v2/projects/{project_id}", SMALL],
  ["POST /v2/projects/{project_id}/log_streams", SMALL],
  ["POST /v2/projects/{project_id}/experiments", SMALL],
  ["POST /v2/projects/{project_id}/traces", INGEST],
  ["POST /v2/projects/{project_id}/sessions", INGEST],
  ["POST /v2/projects/{project_id}/spans", INGEST],
  ["PATCH /v2/projects/{project_id}/traces/{trace_id}", INGEST],
  ["PATCH /v2/projects/{project_id}/spans/{span_id}", INGEST],
  ["POST /v2/projects/{project_id}/traces/partial_search", SEARCH],
  ["POST /v2/projects/{project_id}/spans/partial_search", SEARCH],
  ["POST /v2/projects/{project_id}/sessions/partial_search", SEARCH],
  ["POST /v2/projects/{project_id}/traces/search", SEARCH],
  ["POST /v2/projects/{project_id}/spans/search", SEARCH],
  ["POST /v2/projects/{project_id}/sessions/search", SEARCH],
  ["POST /v2/projects/{project_id}/traces/count", SEARCH],
  ["POST /v2/projects/{project_id}/spans/count", SEARCH],
  ["POST /v2/projects/{project_id}/sessions/count", SEARCH],
  // Metrics take the search's filters (and up to 100 metric details).
  ["POST /v2/projects/{project_id}/metrics/search", SEARCH],
  ["POST /v2/projects/{project_id}/metrics/custom_search", SEARCH],
  ["POST /v2/projects/{project_id}/traces/available_columns", SMALL],
  ["POST /v2/projects/{project_id}/spans/available_columns", SMALL],
  ["POST /v2/projects/{project_id}/sessions/available_columns", SMALL],
  ["POST /v2/org-jobs/delete-by-metadata", SMALL],
  // The search's body (filters), so the search's cap.
  ["POST /v2/projects/{project_id}/traces/delete", SEARCH],
  ["POST /v2/projects/{project_id}/spans/delete", SEARCH],
  ["POST /v2/projects/{project_id}/sessions/delete", SEARCH],
  ["POST /v2/projects/{project_id}/export_records", SEARCH],
  ["POST /v2/projects/{project_id}/export_records/url", SEARCH],
  ["PUT /v2/models/{model_name}/price_overrides", SMALL],
  ["PUT /v2/projects/{project_id}/analytics_settings", SMALL],
  ["PUT /v2/projects/{project_id}/redaction", SMALL],
  // A channel's name and URL; a rule carries metrics/search's filters (at most 50 leaves).
  ["POST /v2/notification_channels", SMALL],
  ["POST /v2/projects/{project_id}/alerts", SMALL],
  ["PATCH /v2/projects/{project_id}/alerts/{alert_id}", SMALL],
  ["POST /v2/projects/{project_id}/redaction/apply", SMALL],
  // Judge integrations, scorers and their versions (an LLM judge's instructions and prompt, a
  // preset's params, a JSON schema among them), a run's scorer settings (at most 50 scorers and 20
  // segments of filters), a backfill's range, a test on one record: each a few KB at most.
  ["PUT /v2/integrations/custom", SMALL],
  ["PUT /v2/integrations/openai", SMALL],
  ["POST /v2/scorers", SMALL],
  ["POST /v2/scorers/list", SMALL],
  ["PATCH /v2/scorers/{scorer_id}", SMALL],
  ["POST /v2/scorers/{scorer_id}/version/preset", SMALL],
  ["POST /v2/scorers/{scorer_id}/version/llm", SMALL],
  ["POST /v2/scorers/{scorer_id}/test", SMALL],
  ["PATCH /v2/projects/{project_id}/log_streams/{log_stream_id}/metric_settings", SMALL],
  ["PATCH /v2/projects/{project_id}/experiments/{experiment_id}/metric_settings", SMALL],
  ["POST /v2/projects/{project_id}/log_streams/{log_stream_id}/metric_settings/backfill", SMALL],
  ["POST /v2/projects/{project_id}/experiments/{experiment_id}/metric_settings/backfill", SMALL],
  ["POST /v2/projects/{project_id}/redaction/preview", REDACTION_PREVIEW],
  ["POST /v2/projects/{project_id}/annotation/templates", ANNOTATION],
  ["PATCH /v2/projects/{project_id}/annotation/templates/{template_id}", SMALL],
  ["POST /v2/projects/{project_id}/annotation/templates/reorder", SMALL],
  ["PUT /v2/projects/{project_id}/annotation/templates/{template_id}/records/{record_id}/rating", SMALL],
  ["PUT /v2/projects/{project_id}/annotation/templates/{template_id}/traces/{trace_id}/rating", SMALL],
  ["POST /v2/projects/{project_id}/annotation/ratings", ANNOTATION_BULK],
  ["POST /v2/annotation_queues", QUEUE_USERS],
  ["PATCH /v2/annotation_queues/{queue_id}", SMALL],
  ["POST /v2/annotation_queues/query", SMALL],
  ["POST /v2/annotation_queues/count", SMALL],
  ["POST /v2/annotation_queues/{queue_id}/users", QUEUE_USERS],
  ["PATCH /v2/annotation_queues/{queue_id}/users/{user_id}", SMALL],
  ["POST /v2/annotation_queues/{queue_id}/templates", ANNOTATION],
  ["PATCH /v2/annotation_queues/{queue_id}/templates/{template_id}", SMALL],
  ["POST /v2/annotation_queues/{queue_id}/records", QUEUE_RECORDS],
  ["POST /v2/annotation_queues/{queue_id}/records/remove", QUEUE_RECORDS],
  ["POST /v2/annotation_queues/{queue_id}/records/count", SEARCH],
  ["POST /v2/annotation_queues/{queue_id}/partial_search", SEARCH],
  ["PUT /v2/annotation_queues/{queue_id}/records/{record_id}/rating", SMALL],
  // OTLP reads its own bodies (src/otlp/read-body.ts: gzip inflated, counted after inflation)
  // with this cap (test/body-limits.test.ts keeps OTLP_LIMITS.maxBodyBytes equal to it).
  ["POST /otel/v1/traces", OTLP],
  ["POST /otel/traces", OTLP],
  ["POST /v2/otel/v1/traces", OTLP],
  ["POST /v2/otel/traces", OTLP],
]);

/** `POST /v2/projects/{project_id}/traces`: the key of a route in the table. */
export function routeKey(method: string, openApiPath: string): string {
  return `${method.toUpperCase()} ${openApiPath}`;
}

/** A Hono route pattern (`/v2/projects/:project_id`) as the OpenAPI document writes it. */
export function openApiPathOf(routePattern: string): string {
  return routePattern.replace(/:(\w+)/g, "{$1}");
}

export interface BodyLimit {
  /** The route as documented, for the 413's message. */
  route: string;
  bytes: number;
  /** JSON values a body may hold (json-shape.ts). */
  values: number;
  /** Whether the table names the route (else DEFAULT_BODY_LIMIT applies). */
  listed: boolean;
}

/** The cap of the route a request matched (`routePattern` as Hono reports it in `c.req.routePath`). */
export function bodyLimitFor(method: string, routePattern: string): BodyLimit {
  const route = routeKey(method, openApiPathOf(routePattern));
  const cap = ROUTE_BODY_LIMITS.get(route);
  return cap === undefined ? { route, ...DEFAULT_CAP, listed: false } : { route, ...cap, listed: true };
}

/** Every listed route and its caps, for the documentation test. */
export function listedBodyLimits(): [string, Cap][] {
  return [...ROUTE_BODY_LIMITS];
}

/** "10 MiB", "64 KiB", "512 bytes": a cap as a person reads it. */
export function formatBytes(bytes: number): string {
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes >= KiB && bytes % KiB === 0) return `${bytes / KiB} KiB`;
  return `${bytes} bytes`;
}
