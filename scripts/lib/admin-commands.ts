/// <reference types="node" />
/**
 * The admin operations (organizations, users, API keys) against a D1 database (in process when
 * it is local, through `wrangler d1 execute --remote` when deployed: scripts/lib/wrangler.ts): the statements of src/admin/provisioning.ts, rendered to SQL, with every
 * "nothing happened" case turned into an error a person can act on.
 */
import {
  createApiKey,
  createOrganization,
  createUser,
  deleteUser,
  renderSql,
  resetPassword,
  revokeApiKey,
  setRole,
  type Statement,
} from "../../src/admin/provisioning";
import { type D1Target, WranglerError, executeD1 } from "./wrangler";

export type Role = "admin" | "member";

/** A failure the operator caused or can fix (unknown id, duplicate email): printed as is. */
export class AdminError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AdminError";
  }
}

/** Runs the statements in one D1 batch; returns the rows each one returned. */
async function run(statements: Statement[], target: D1Target): Promise<Record<string, unknown>[][]> {
  const results = await executeD1(renderSql(statements), target);
  if (results.length !== statements.length) {
    throw new WranglerError(`expected ${statements.length} statement results, got ${results.length}`, JSON.stringify(results));
  }
  return results.map((r) => r.results ?? []);
}

export async function createOrganizationCommand(name: string, target: D1Target) {
  const org = createOrganization(name);
  const [inserted] = await run(org.statements, target);
  if (inserted?.length !== 1) throw new AdminError("the organization was not created");
  return { organization_id: org.organization_id, name };
}

export async function createUserCommand(
  input: { organizationId: string; email: string; password: string; role: Role },
  target: D1Target,
) {
  const user = await createUser(input);
  let inserted: Record<string, unknown>[] | undefined;
  try {
    [inserted] = await run(user.statements, target);
  } catch (error) {
    if (error instanceof WranglerError && /UNIQUE constraint failed: users\.email/.test(error.message)) {
      throw new AdminError(`a user with email ${input.email.toLowerCase()} already exists`);
    }
    throw error;
  }
  // INSERT ... SELECT FROM organizations inserts nothing when the organization does not exist.
  if (inserted?.length !== 1) throw new AdminError(`organization ${input.organizationId} not found`);
  return { user_id: user.user_id, organization_id: input.organizationId, email: input.email.toLowerCase(), role: input.role };
}

export async function createApiKeyCommand(userId: string, target: D1Target) {
  const key = await createApiKey(userId);
  const [inserted] = await run(key.statements, target);
  if (inserted?.length !== 1) throw new AdminError(`user ${userId} not found`);
  return { api_key: key.api_key, key_id: key.key_id, user_id: userId };
}

/** Ends the key and the bearer tokens exchanged from it (within 5 s). */
export async function revokeApiKeyCommand(keyId: string, target: D1Target) {
  const [deleted] = await run(revokeApiKey(keyId).statements, target);
  if (deleted?.length !== 1) throw new AdminError(`API key ${keyId} not found`);
  return { key_id: keyId, user_id: String(deleted[0]!.user_id), revoked: true };
}

/** Removes the user and their keys; their tokens stop working within 5 s. Their data stays. */
export async function deleteUserCommand(userId: string, target: D1Target) {
  const [keys, deleted] = await run(deleteUser(userId).statements, target);
  if (deleted?.length !== 1) throw new AdminError(`user ${userId} not found`);
  return { user_id: userId, email: String(deleted[0]!.email), deleted: true, api_keys_revoked: keys?.length ?? 0 };
}

export async function setRoleCommand(userId: string, role: Role, target: D1Target) {
  const [updated] = await run(setRole(userId, role).statements, target);
  if (updated?.length !== 1) throw new AdminError(`user ${userId} not found`);
  return { user_id: userId, role };
}

/** A new password; every bearer token of the user ends within 5 s (API keys stay). */
export async function resetPasswordCommand(userId: string, password: string, target: D1Target) {
  const [updated] = await run((await resetPassword(userId, password)).statements, target);
  if (updated?.length !== 1) throw new AdminError(`user ${userId} not found`);
  return { user_id: userId, password_reset: true };
}

/** The user with this email, if any (emails are stored in lower case). */
export async function findUserByEmail(email: string, target: D1Target): Promise<{ user_id: string; organization_id: string } | undefined> {
  const [rows] = await run([{ sql: "SELECT id, organization_id FROM users WHERE email = ?", params: [email.toLowerCase()] }], target);
  const row = rows?.[0];
  return row ? { user_id: String(row.id), organization_id: String(row.organization_id) } : undefined;
}

/**
 * The retention (days, or null: for ever) that the organization's new projects take when their
 * creator names none (docs/retention.md). Existing projects keep theirs.
 */
export async function setDefaultRetentionCommand(organizationId: string, days: number | null, target: D1Target) {
  const [updated] = await run(
    [{ sql: "UPDATE organizations SET default_retention_days = ? WHERE id = ? RETURNING id, default_retention_days", params: [days, organizationId] }],
    target,
  );
  if (updated?.length !== 1) throw new AdminError(`no organization ${organizationId}`);
  return { organization_id: organizationId, default_retention_days: days };
}
