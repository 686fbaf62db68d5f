/**
 * Projects as every route answers them: Galileo's `ProjectDB` (contract section 17). Its Python
 * SDK's generated model requires `id`, `created_by`, `created_by_user` (a `UserInfo`: `id`,
 * `email`), `runs`, `created_at` and `updated_at`; a project without them cannot be parsed, and
 * the SDK's `GalileoLogger` cannot start.
 *
 * `runs` is Galileo's list of legacy runs (prompt-evaluation runs with samples and winners); this
 * service has none, its log streams and experiments are listed by their own routes, so it is always
 * empty.
 */
import { z } from "@hono/zod-openapi";
import { sql } from "drizzle-orm";
import type { database } from "../db/client";
import { type projects, users } from "../db/schema";
import { ProjectSchema, projectShape } from "./project-shapes";

type Database = ReturnType<typeof database>;

export const UserInfoSchema = z
  .object({
    id: z.string(),
    email: z.string(),
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
  })
  .openapi("UserInfo");

export const ProjectAnswerSchema = ProjectSchema.extend({
  created_by_user: UserInfoSchema.openapi({ description: "Who created the project (email empty if that user is gone)." }),
  runs: z.array(z.record(z.string(), z.unknown())).max(0).openapi({ description: "Galileo's legacy runs: always empty here (log streams and experiments have their own routes)." }),
}).openapi("ProjectDB");

export type ProjectAnswer = z.infer<typeof ProjectAnswerSchema>;

/** A creator that is no longer known (or a project created by no user): the id as stored. */
const NIL_UUID = "00000000-0000-0000-0000-000000000000";

/** The answers for these project rows: one indexed lookup of their creators, whatever their number. */
export async function projectAnswers(db: Database, rows: readonly (typeof projects.$inferSelect)[]): Promise<ProjectAnswer[]> {
  const creatorIds = [...new Set(rows.map((row) => row.createdBy).filter((id): id is string => id !== null))];
  const emails = new Map<string, string>();
  if (creatorIds.length > 0) {
    const found = await db
      .select({ id: users.id, email: users.email })
      .from(users)
      .where(sql`${users.id} IN (SELECT "value" FROM json_each(${JSON.stringify(creatorIds)}))`);
    for (const user of found) emails.set(user.id, user.email);
  }
  return rows.map((row) => ({
    ...projectShape(row),
    created_by_user: { id: row.createdBy ?? NIL_UUID, email: (row.createdBy && emails.get(row.createdBy)) ?? "", first_name: null, last_name: null },
    runs: [],
  }));
}

export async function projectAnswer(db: Database, row: typeof projects.$inferSelect): Promise<ProjectAnswer> {
  const [answer] = await projectAnswers(db, [row]);
  return answer!;
}
