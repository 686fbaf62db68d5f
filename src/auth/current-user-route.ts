/**
 * `GET /v2/current_user` (and `/current_user`): who the credentials belong to. Clients (the trace
 * explorer among them) read the role here to offer admin-only actions; the server still checks the
 * role on every admin route, so this answer only shapes what a client shows.
 *
 * The answer is Galileo's `User` (galileo-core `schemas/core/user.py`: `id` a UUID4, `email`,
 * `role` one of admin/manager/user/read_only), which the galileo Python SDK validates at start-up
 * before any other call (contract section 17): a member is therefore `role: "user"`, Galileo's name
 * for the same thing.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { commonErrorResponses } from "../http/common-schemas";
import type { Router } from "../http/create-router";

const CurrentUser = z
  .object({
    id: z.string().uuid(),
    email: z.string(),
    organization_id: z.string(),
    role: z.enum(["admin", "user"]).openapi({ description: "Galileo's role names: an organization's member is a `user`." }),
  })
  .openapi("CurrentUser");

const currentUser = createRoute({
  method: "get",
  path: "/current_user",
  tags: ["Authentication"],
  summary: "The user the credentials belong to, with their organization and role",
  responses: {
    200: { content: { "application/json": { schema: CurrentUser } }, description: "The caller" },
    ...commonErrorResponses,
  },
});

export function registerCurrentUser(app: Router): void {
  app.openapi(currentUser, (c) => {
    const principal = c.get("principal");
    return c.json({ id: principal.userId, email: principal.email, organization_id: principal.organizationId, role: principal.role === "admin" ? "admin" : "user" }, 200);
  });
}
