import { env } from "cloudflare:test";
import { createApiKey, createOrganization, createUser, runStatements } from "../../src/admin/provisioning";

export interface Tenant {
  organizationId: string;
  userId: string;
  email: string;
  password: string;
  apiKey: string;
  /** The key's id, as `create-api-key` prints it (`revoke-api-key --key`). */
  apiKeyId: string;
  role: "admin" | "member";
}

let counter = 0;

/** A fresh organization with one user and one API key, uniquely named so tests never collide. */
export async function createTenant(role: "admin" | "member" = "admin", organizationId?: string): Promise<Tenant> {
  counter += 1;
  const unique = `${Date.now().toString(36)}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
  let orgId = organizationId;
  if (!orgId) {
    const org = createOrganization(`org-${unique}`);
    await runStatements(env.DB, org.statements);
    orgId = org.organization_id;
  }
  const email = `user-${unique}@example.com`;
  const password = `pw-${unique}`;
  const user = await createUser({ organizationId: orgId, email, password, role });
  await runStatements(env.DB, user.statements);
  const key = await createApiKey(user.user_id);
  await runStatements(env.DB, key.statements);
  return { organizationId: orgId, userId: user.user_id, email, password, apiKey: key.api_key, apiKeyId: key.key_id, role };
}

/** A second user (e.g. a member) in the same organization as `tenant`. */
export function addUser(tenant: Tenant, role: "admin" | "member"): Promise<Tenant> {
  return createTenant(role, tenant.organizationId);
}
