/// <reference types="node" />
/**
 * Seeds the demo dataset once: an organization, an admin user, a member user and an API key (through the admin
 * statements, like the admin command line), then a project, a log stream, sessions and traces
 * through the real HTTP API of the running server, exactly as a client would send them.
 *
 * What was created is kept in `demo-credentials.json` next to the local database it describes
 * (git-ignored, under .wrangler/), so later starts print the same key instead of seeding again.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createApiKey, createOrganization, createUser, renderSql } from "../../src/admin/provisioning";
import { createApiKeyCommand, createUserCommand, findUserByEmail } from "./admin-commands";
import { DEMO_LOG_STREAM, DEMO_PROBES_LOG_STREAM, DEMO_PROBES_PROJECT, DEMO_PROJECT, demoLooseTraces, demoSessions } from "./demo-dataset";
import { type D1Target, executeD1, REPO_ROOT, WranglerError } from "./wrangler";

export const DEMO_EMAIL = "demo@example.com";
/** A member (not admin) of the demo organization: shows what members may and may not do. */
export const DEMO_MEMBER_EMAIL = "member@example.com";
export const DEMO_ORGANIZATION = "Demo organization";

export interface DemoCredentials {
  organization_id: string;
  user_id: string;
  email: string;
  /** Null when the demo user existed before this seed (only its hash is stored anywhere). */
  password: string | null;
  member_email: string;
  /** Null when the member existed before this seed. */
  member_password: string | null;
  api_key: string;
  project_id: string;
  log_stream_id: string;
  seeded_at: string;
}

/** The credentials file of a local state directory (wrangler's default: .wrangler/state). */
export function demoStatePath(persistTo?: string): string {
  return join(persistTo ? resolve(persistTo) : join(REPO_ROOT, ".wrangler", "state"), "demo-credentials.json");
}

export function readDemoState(path: string): DemoCredentials | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<DemoCredentials>;
    return typeof parsed.api_key === "string" && typeof parsed.project_id === "string" ? (parsed as DemoCredentials) : undefined;
  } catch {
    return undefined;
  }
}

export function writeDemoState(path: string, credentials: DemoCredentials): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
}

class ApiClient {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
  ) {}

  async request<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { "Service-API-Key": this.apiKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // keep the text for the error message
    }
    return { status: response.status, body: parsed as T };
  }

  async post<T = Record<string, unknown>>(path: string, body: unknown): Promise<T> {
    const answer = await this.request<T>("POST", path, body);
    if (answer.status !== 200) throw new Error(`POST ${path} answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 500)}`);
    return answer.body;
  }
}

/** Whether the key still opens the server (false after the local database was reset). */
export async function apiKeyWorks(baseUrl: string, apiKey: string): Promise<boolean> {
  const answer = await new ApiClient(baseUrl, apiKey).request("GET", "/v2/projects");
  if (answer.status === 200) return true;
  if (answer.status === 401) return false;
  throw new Error(`GET /v2/projects answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 500)}`);
}

/** The demo member, made unless an earlier seed made it. */
async function demoMember(organizationId: string, target: D1Target): Promise<{ member_email: string; member_password: string | null }> {
  if (await findUserByEmail(DEMO_MEMBER_EMAIL, target)) return { member_email: DEMO_MEMBER_EMAIL, member_password: null };
  const password = randomBytes(12).toString("base64url");
  await createUserCommand({ organizationId, email: DEMO_MEMBER_EMAIL, password, role: "member" }, target);
  return { member_email: DEMO_MEMBER_EMAIL, member_password: password };
}

/**
 * The demo organization, its users and a fresh API key. A first seed writes them all in one
 * D1 batch (scripts/lib/wrangler.ts executeD1); a later
 * seed reuses the users an earlier one made.
 */
async function demoPrincipal(target: D1Target) {
  const existing = await findUserByEmail(DEMO_EMAIL, target);
  if (existing) {
    const key = await createApiKeyCommand(existing.user_id, target);
    return { ...existing, email: DEMO_EMAIL, password: null, ...(await demoMember(existing.organization_id, target)), api_key: key.api_key };
  }
  const org = createOrganization(DEMO_ORGANIZATION);
  const password = randomBytes(12).toString("base64url");
  const memberPassword = randomBytes(12).toString("base64url");
  const user = await createUser({ organizationId: org.organization_id, email: DEMO_EMAIL, password, role: "admin" });
  const member = await createUser({ organizationId: org.organization_id, email: DEMO_MEMBER_EMAIL, password: memberPassword, role: "member" });
  const key = await createApiKey(user.user_id);
  const statements = [...org.statements, ...user.statements, ...member.statements, ...key.statements];
  const results = await executeD1(renderSql(statements), target);
  // Every statement returns the row it wrote (RETURNING id): a missing row means it wrote nothing.
  if (results.length !== statements.length || results.some((r) => r.results.length !== 1)) {
    throw new WranglerError("the demo organization, users and key were not all created", JSON.stringify(results));
  }
  return {
    organization_id: org.organization_id,
    user_id: user.user_id,
    email: DEMO_EMAIL,
    password,
    member_email: DEMO_MEMBER_EMAIL,
    member_password: memberPassword,
    api_key: key.api_key,
  };
}

/** Seeds everything through the server at `baseUrl`, whose database `target` names. */
export async function seedDemo(baseUrl: string, target: D1Target, now = Date.now()): Promise<DemoCredentials> {
  const principal = await demoPrincipal(target);
  const api = new ApiClient(baseUrl, principal.api_key);
  const project = await api.post<{ id: string }>("/v2/projects", { name: DEMO_PROJECT, type: "gen_ai" });
  const logStream = await api.post<{ id: string }>(`/v2/projects/${project.id}/log_streams`, { name: DEMO_LOG_STREAM });
  const run = { log_stream_id: logStream.id };
  for (const session of demoSessions(now)) {
    await api.post(`/v2/projects/${project.id}/sessions`, { ...run, ...session.body });
    await api.post(`/v2/projects/${project.id}/traces`, { ...run, session_id: session.body.id, traces: session.traces });
  }
  await api.post(`/v2/projects/${project.id}/traces`, { ...run, traces: demoLooseTraces(now) });
  // The second project, created after the first holds data: it goes to the other shard. (Ids are
  // per project: the probe keeps the same ids in both.)
  const probes = await api.post<{ id: string }>("/v2/projects", { name: DEMO_PROBES_PROJECT, type: "gen_ai" });
  const nightly = await api.post<{ id: string }>(`/v2/projects/${probes.id}/log_streams`, { name: DEMO_PROBES_LOG_STREAM });
  await api.post(`/v2/projects/${probes.id}/traces`, { log_stream_id: nightly.id, traces: demoLooseTraces(now) });
  return { ...principal, project_id: project.id, log_stream_id: logStream.id, seeded_at: new Date(now).toISOString() };
}
