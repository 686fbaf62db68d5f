/**
 * Creating organizations, users and API keys: the statements are built here once and run either
 * through the D1 binding (tests, seed) or rendered to SQL for `wrangler d1 execute` (the admin
 * command line, locally or with --remote).
 *
 * Every statement ends in `RETURNING id`: a user or key for an unknown organization or user is an
 * INSERT ... SELECT that inserts nothing and fails no constraint, and `wrangler d1 execute --json`
 * reports no row count for local databases, so the returned row is how a caller knows it worked.
 */
import { generateApiKey, hashApiKey } from "../auth/api-keys";
import { hashPassword } from "../auth/passwords";

export interface Statement {
  sql: string;
  params: (string | number | null)[];
}

function nowMicros(): number {
  return Date.now() * 1000;
}

export function createOrganization(name: string, id: string = crypto.randomUUID()) {
  return {
    organization_id: id,
    statements: [{ sql: "INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?) RETURNING id", params: [id, name, nowMicros()] }] as Statement[],
  };
}

export async function createUser(input: { organizationId: string; email: string; password: string; role: "admin" | "member" }) {
  const id = crypto.randomUUID();
  const hashed = await hashPassword(input.password);
  return {
    user_id: id,
    statements: [
      {
        sql: `INSERT INTO users (id, organization_id, email, role, password_hash, password_salt, password_iterations, created_at)
              SELECT ?, id, ?, ?, ?, ?, ?, ? FROM organizations WHERE id = ? RETURNING id`,
        params: [id, input.email.toLowerCase(), input.role, hashed.hash, hashed.salt, hashed.iterations, nowMicros(), input.organizationId],
      },
    ] as Statement[],
  };
}

export async function createApiKey(userId: string) {
  const key = generateApiKey();
  return {
    api_key: key,
    statements: [
      {
        sql: "INSERT INTO api_keys (id, user_id, key_hash, created_at) SELECT ?, id, ?, ? FROM users WHERE id = ? RETURNING id",
        params: [crypto.randomUUID(), await hashApiKey(key), nowMicros(), userId],
      },
    ] as Statement[],
  };
}

/** Runs statements through a D1 binding, atomically. Returns the rows each one changed. */
export async function runStatements(db: D1Database, statements: Statement[]): Promise<number[]> {
  const results = await db.batch(statements.map((s) => db.prepare(s.sql).bind(...s.params)));
  return results.map((r) => r.meta.changes);
}

/** SQL text with the parameters inlined as literals, for `wrangler d1 execute --command`. */
export function renderSql(statements: Statement[]): string {
  const literal = (v: string | number | null) =>
    v === null ? "NULL" : typeof v === "number" ? String(v) : `'${v.replace(/'/g, "''")}'`;
  return statements
    .map((s) => {
      let i = 0;
      return s.sql.replace(/\?/g, () => literal(s.params[i++] ?? null)).replace(/\s+/g, " ").trim();
    })
    .join("; ");
}
