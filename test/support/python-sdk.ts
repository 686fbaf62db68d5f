/**
 * What Galileo's Python SDK (galileo 2.6.0, rungalileo/galileo-python a1a08217, with galileo-core
 * ^4.5) puts on the wire, request by request, and the fields its response models require: facts
 * read from its source (docs/sdk-compatibility.md, "The Python SDK"), replayed here over
 * `SELF.fetch` because the SDK itself cannot be installed on our machines.
 *
 * URLs: galileo-core's ApiClient joins every path to the API URL with Python's `urljoin`, which is
 * `new URL(path, base)`: relative routes (`healthcheck`, `login/api_key`, `current_user`) go under
 * the base, and the leading-slash routes (the generated client's `/projects/...`, the logger's
 * `/v2/projects/...`) replace its path. The ingest probe is an f-string on the URL without its
 * trailing slash.
 */
import { SELF } from "cloudflare:test";
import { z } from "zod";

export const ORIGIN = "http://trace-store.test";

/** `GALILEO_API_URL` as pydantic's `Url` keeps it: a bare host gains a slash, a path keeps its own. */
export const BASE_URL_FORMS = [
  { name: "the service's root", apiUrl: `${ORIGIN}/` },
  { name: "<root>/v2/", apiUrl: `${ORIGIN}/v2/` },
  { name: "<root>/v2 (no slash: urljoin drops the v2)", apiUrl: `${ORIGIN}/v2` },
] as const;

/** httpx's default headers: `Accept: *\/*` on every request (never a browser's). */
const HTTPX_DEFAULTS = { accept: "*/*", "accept-encoding": "gzip, deflate", connection: "keep-alive", "user-agent": "python-httpx/0.28.1" };
/** galileo-core `HttpHeaders.json()`: the ApiClient's default content headers. */
const CORE_JSON = { accept: "application/json", "Content-Type": "application/json" };
const sdkHeader = (entry: string) => ({ "X-Galileo-SDK": `galileo-python/2.6.0 ${entry}` });

export interface SentRequest {
  method: string;
  path: string;
  status: number;
}

/** httpx's query encoding: booleans as `true`/`false`, None dropped (the generated client drops them first). */
function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== null && value !== undefined) search.append(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : "";
}

type Sender = "core" | "generated" | "traces" | "probe";

export class PythonSdkWire {
  token: string | undefined;
  readonly sent: SentRequest[] = [];

  constructor(
    readonly apiUrl: string,
    private readonly apiKey: string,
  ) {}

  /** The URL galileo-core's `urljoin(api_url, endpoint)` makes. */
  url(endpoint: string): URL {
    return new URL(endpoint, this.apiUrl);
  }

  private async send(sender: Sender, method: string, endpoint: string, options: { json?: unknown; params?: Record<string, string | number | boolean | null | undefined>; entry?: string } = {}) {
    const url = sender === "probe" ? new URL(`${this.apiUrl.replace(/\/+$/, "")}${endpoint}`) : this.url(endpoint);
    const headers: Record<string, string> = { ...HTTPX_DEFAULTS };
    if (sender === "core") Object.assign(headers, CORE_JSON);
    if (sender === "traces") Object.assign(headers, sdkHeader(options.entry ?? "flush@galileo.logger.logger"), CORE_JSON);
    if (sender === "generated") {
      Object.assign(headers, sdkHeader(options.entry ?? "get@galileo.projects"));
      if (options.json !== undefined) headers["Content-Type"] = "application/json";
    }
    if (sender !== "probe" && this.token) headers.Authorization = `Bearer ${this.token}`;
    const fullUrl = `${url.origin}${url.pathname}${query(options.params ?? {})}`;
    const response = await SELF.fetch(fullUrl, {
      method,
      headers,
      // httpx's JSON encoding (compact separators); the key order is the models' field order.
      body: options.json === undefined ? undefined : JSON.stringify(options.json),
    });
    const text = await response.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: kept as text (the SDK would fail on it)
    }
    this.sent.push({ method, path: url.pathname, status: response.status });
    return { status: response.status, body, headers: response.headers };
  }

  /**
   * `GalileoPythonConfig.get()`: galileo-core's `api_url` validator probes the healthcheck (no
   * credentials), `set_jwt_token` logs in with the key, `set_validated_api_client` reads the
   * current user and validates it as galileo-core's `User`.
   */
  async configure() {
    const health = await this.send("core", "GET", "healthcheck");
    const login = await this.send("core", "POST", "login/api_key", { json: { api_key: this.apiKey } });
    this.token = login.body?.access_token;
    const user = await this.send("core", "GET", "current_user");
    return { health, login, user };
  }

  /** The same with `GALILEO_USERNAME` / `GALILEO_PASSWORD`: an OAuth2 form with `auth_method=email`. */
  async configureWithPassword(username: string, password: string) {
    await this.send("core", "GET", "healthcheck");
    const url = this.url("login");
    const response = await SELF.fetch(url, {
      method: "POST",
      headers: { ...HTTPX_DEFAULTS, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ username, password, auth_method: "email" }).toString(),
    });
    const login = { status: response.status, body: (await response.json()) as { access_token?: string } };
    this.sent.push({ method: "POST", path: url.pathname, status: response.status });
    this.token = login.body.access_token;
    const user = await this.send("core", "GET", "current_user");
    return { login, user };
  }

  /** `GET /projects?project_name=&type=gen_ai` (get_projects_projects_get). */
  getProjectsByName(name: string) {
    return this.send("generated", "GET", "/projects", { params: { project_name: name, type: "gen_ai" } });
  }

  /** `POST /projects` with `ProjectCreate(name, type_=GEN_AI, create_example_templates=False, created_by=None).to_dict()`. */
  createProject(name: string) {
    return this.send("generated", "POST", "/projects", { json: { name, created_by: null, type: "gen_ai", create_example_templates: false }, entry: "create@galileo.projects" });
  }

  /** `LogStreams._list_all`: pages of 500 (include_counts first, as the generated client orders its params). */
  listLogStreams(projectId: string, startingToken = 0) {
    return this.send("generated", "GET", `/projects/${projectId}/log_streams/paginated`, {
      params: { include_counts: false, starting_token: startingToken, limit: 500 },
      entry: "get@galileo.log_streams",
    });
  }

  createLogStream(projectId: string, name: string) {
    return this.send("generated", "POST", `/projects/${projectId}/log_streams`, { json: { name }, entry: "create@galileo.log_streams" });
  }

  /** `GalileoLogger._is_ingest_service_available`: a bare httpx.get, no credentials. */
  probeIngestService() {
    return this.send("probe", "GET", "/ingest/healthz");
  }

  /** `Traces.ingest_traces`: `TracesIngestRequest.model_dump(mode="json")` (nulls included). */
  ingestTraces(projectId: string, body: unknown) {
    return this.send("traces", "POST", `/v2/projects/${projectId}/traces`, { json: body });
  }

  ingestSpans(projectId: string, body: unknown) {
    return this.send("traces", "POST", `/v2/projects/${projectId}/spans`, { json: body });
  }

  updateTrace(projectId: string, traceId: string, body: unknown) {
    return this.send("traces", "PATCH", `/v2/projects/${projectId}/traces/${traceId}`, { json: body });
  }

  updateSpan(projectId: string, spanId: string, body: unknown) {
    return this.send("traces", "PATCH", `/v2/projects/${projectId}/spans/${spanId}`, { json: body });
  }

  getTrace(projectId: string, traceId: string) {
    return this.send("traces", "GET", `/v2/projects/${projectId}/traces/${traceId}`);
  }

  searchSessions(projectId: string, body: unknown) {
    return this.send("traces", "POST", `/v2/projects/${projectId}/sessions/search`, { json: body, entry: "start_session@galileo.logger.logger" });
  }

  createSession(projectId: string, body: unknown) {
    return this.send("traces", "POST", `/v2/projects/${projectId}/sessions`, { json: body, entry: "start_session@galileo.logger.logger" });
  }

  /** `galileo.search.get_traces|get_spans|get_sessions`: the generated client's root route. */
  search(projectId: string, family: "traces" | "spans" | "sessions", body: unknown) {
    return this.send("generated", "POST", `/projects/${projectId}/${family}/search`, { json: body, entry: `get_${family}@galileo.search` });
  }

  createExperiment(projectId: string, name: string) {
    return this.send("generated", "POST", `/projects/${projectId}/experiments`, { json: { name, task_type: 16, trigger: false }, entry: "create_experiment@galileo.experiments" });
  }

  listExperiments(projectId: string) {
    return this.send("generated", "GET", `/projects/${projectId}/experiments`, { params: { include_counts: false }, entry: "get_experiment@galileo.experiments" });
  }
}

// ---- The fields the SDK's models require (a missing key is a KeyError in the generated
// `from_dict`, a failed validation in galileo-core's pydantic models). Null is allowed where the
// model only pops the key.

/** A key that must be present, whatever its value (the generated `d.pop("key")`). */
const present = z.custom<unknown>((value) => value !== undefined, { message: "required key missing" });
/** `dateutil.isoparse`: an ISO 8601 date-time. */
const isoDateTime = z.string().refine((value) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(value) && !Number.isNaN(Date.parse(value)), "not ISO 8601");
const uuid4 = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i, "not a UUID4");

/** galileo-core `schemas/core/user.py` User: `id: UUID4`, `email: str`, `role: UserRole = user`. */
export const User = z.object({ id: uuid4, email: z.string(), role: z.enum(["admin", "manager", "user", "read_only"]).optional() });
/** galileo-core `get_jwt_token`: `token_data.get("access_token", "")`, then a JWT decoded for its `exp`. */
export const Token = z.object({ access_token: z.string().regex(/^[\w-]+\.[\w-]+\.[\w-]+$/) });
/** `UserInfo.from_dict`: id, email. */
export const UserInfo = z.object({ id: present, email: present });
/** `RunDB.from_dict`. */
export const RunDB = z.object({
  created_by: present,
  num_samples: present,
  winner: present,
  id: present,
  created_at: isoDateTime,
  updated_at: isoDateTime,
  last_updated_by: present,
  creator: UserInfo,
});
/** `ProjectDB.from_dict`; the logger also requires `type == "gen_ai"` of a project found by name. */
export const ProjectDB = z.object({
  id: present,
  created_by: present,
  created_by_user: UserInfo,
  runs: z.array(RunDB),
  created_at: isoDateTime,
  updated_at: isoDateTime,
  type: z.literal("gen_ai"),
  name: z.string(),
});
export const ProjectCreateResponse = z.object({ id: present, created_at: isoDateTime, updated_at: isoDateTime });
export const LogStreamResponse = z.object({ id: present, created_at: isoDateTime, updated_at: isoDateTime, name: present, project_id: present });
/** `ListLogStreamResponse.from_dict`; `_list_all` follows `next_starting_token` (an int) while `paginated`. */
export const ListLogStreamResponse = z.object({
  log_streams: z.array(LogStreamResponse),
  paginated: z.boolean().optional(),
  next_starting_token: z.number().int().nullable().optional(),
});
export const ExperimentResponse = z.object({ id: present, project_id: present, task_type: present });

const trace = z.looseObject({ type: z.literal("trace"), id: present, session_id: present, trace_id: present, project_id: present, run_id: present, created_at: isoDateTime.optional() });
const span = z.looseObject({
  type: z.enum(["agent", "workflow", "llm", "tool", "retriever", "control"]),
  id: present,
  session_id: present,
  project_id: present,
  run_id: present,
  parent_id: present,
  created_at: isoDateTime.optional(),
});
const session = z.looseObject({ type: z.literal("session"), id: present, project_id: present, run_id: present, created_at: isoDateTime.optional() });
/** `LogRecordsQueryResponse.from_dict`: records discriminated by `type` (Extended*Record), kept whole. */
export const LogRecordsQueryResponse = z.object({
  starting_token: z.number().int().optional(),
  limit: z.number().int().optional(),
  paginated: z.boolean().optional(),
  next_starting_token: z.number().int().nullable().optional(),
  records: z.array(z.union([trace, span, session])),
});
/** `Traces.create_session` reads `session["id"]`; `start_session` reads `sessions["records"][0]["id"]`. */
export const SessionCreated = z.object({ id: uuid4 });
export const SessionSearch = z.object({ records: z.array(z.object({ id: z.string() })) });
