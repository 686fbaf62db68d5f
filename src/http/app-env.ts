import type { Env } from "../env";

/** Who is calling: a user of exactly one organization. */
export interface Principal {
  userId: string;
  organizationId: string;
  role: "admin" | "member";
  email: string;
}

/** Hono's environment for every router of the service. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    requestId: string;
    principal: Principal;
  };
}
