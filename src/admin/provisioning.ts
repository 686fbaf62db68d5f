/**
 * Creating organizations, users and API keys, and revoking them: the statements are built here once and run either
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
  const keyId = crypto.randomUUID();
  return {
    api_key: key,
    key_id: keyId,
    statements: [
      {
        sql: "INSERT INTO api_keys (id, user_id, key_hash, created_at) SELECT ?, id, ?, ? FROM users WHERE id = ? RETURNING id",
        params: [keyId, await hashApiKey(key), nowMicros(), userId],
      },
    ] as Statement[],
  };
}

/*
 * Revocation (issue 19 point 10). The service reads credentials at most 5 s stale
 * (src/auth/principal-store.ts), so each of these takes effect on every isolate within 5 s.
 */

/** Ends an API key, and every bearer token exchanged from it (their `kid` no longer exists). */
export function revokeApiKey(keyId: string) {
  return { statements: [{ sql: "DELETE FROM api_keys WHERE id = ? RETURNING id, user_id", params: [keyId] }] as Statement[] };
}

/** Removes a user, their API keys, and with them every token of theirs. Their data stays. */
export function deleteUser(userId: string) {
  return {
    statements: [
      { sql: "DELETE FROM api_keys WHERE user_id = ? RETURNING id", params: [userId] },
      { sql: "DELETE FROM users WHERE id = ? RETURNING id, organization_id, email", params: [userId] },
    ] as Statement[],
  };
}

/** A user's role; their keys and tokens carry the new one within 5 s. */
export function setRole(userId: string, role: "admin" | "member") {
  return { statements: [{ sql: "UPDATE users SET role = ? WHERE id = ? RETURNING id, role", params: [role, userId] }] as Statement[] };
}

/**
 * A new password; the token generation moves on, which ends every bearer token issued to the user
 * before (by password or by key). The user's API keys stay: revoke them one by one if needed.
 */
export async function resetPassword(userId: string, password: string) {
  const hashed = await hashPassword(password);
  return {
    statements: [
      {
        sql: `UPDATE users SET password_hash = ?, password_salt = ?, password_iterations = ?, token_generation = token_generation + 1
              WHERE id = ? RETURNING id`,
        params: [hashed.hash, hashed.salt, hashed.iterations, userId],
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
