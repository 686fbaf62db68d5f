/**
 * The organization the benchmarks act as: one admin user with an API key (made by the admin
 * provisioning code, as `npm run admin` makes them), one project and one log stream (the rows the
 * projects and log-streams routes insert, built from the drizzle schema).
 */
import { drizzle } from "drizzle-orm/sqlite-proxy";
import { createApiKey, createOrganization, createUser } from "../../src/admin/provisioning";
import { projects, runs } from "../../src/db/schema";
import type { SqlStatement, SqlValue } from "../lib/sqlite-cli";
import type { SeededRandom } from "../lib/seeded-random";

export interface BenchTenant {
  organizationId: string;
  userId: string;
  email: string;
  apiKey: string;
  projectId: string;
  logStreamId: string;
}

/** A query builder that only renders SQL (it never runs anything). */
const renderer = drizzle(async () => {
  throw new Error("the bench renders statements; the sqlite3 shell runs them");
});

export async function benchTenantStatements(r: SeededRandom, createdAtMicros: number): Promise<{ tenant: BenchTenant; statements: SqlStatement[] }> {
  const organization = createOrganization("bench-organization", r.uuid());
  const email = `bench-admin-${r.hex(8)}@example.com`;
  const user = await createUser({ organizationId: organization.organization_id, email, password: `bench-${r.hex(16)}`, role: "admin" });
  // The key is random (crypto), not seeded: a dataset's credentials are its own.
  const key = await createApiKey(user.user_id);
  const projectId = r.uuid();
  const logStreamId = r.uuid();
  const project = renderer
    .insert(projects)
    .values({ id: projectId, organizationId: organization.organization_id, name: "bench-project", type: "gen_ai", createdBy: user.user_id, createdAt: createdAtMicros, updatedAt: createdAtMicros })
    .toSQL();
  const logStream = renderer
    .insert(runs)
    .values({ id: logStreamId, organizationId: organization.organization_id, projectId, kind: "log_stream", name: "bench-log-stream", taskType: null, createdBy: user.user_id, createdAt: createdAtMicros, updatedAt: createdAtMicros })
    .toSQL();
  const statements: SqlStatement[] = [
    ...organization.statements,
    ...user.statements,
    ...key.statements,
    { sql: project.sql, params: project.params as SqlValue[] },
    { sql: logStream.sql, params: logStream.params as SqlValue[] },
    // The bench project lives on the catalog database (its `shard` is null): the catalog holds it
    // for writing, as it holds every project created before sharding.
    {
      sql: "INSERT INTO shard_projects (project_id, organization_id, state, updated_at) VALUES (?, ?, 'active', ?)",
      params: [projectId, organization.organization_id, createdAtMicros],
    },
  ];
  return {
    tenant: { organizationId: organization.organization_id, userId: user.user_id, email, apiKey: key.api_key, projectId, logStreamId },
    statements,
  };
}
