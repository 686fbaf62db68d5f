import { z } from "@hono/zod-openapi";
import { microsToIso } from "../db/client";
import type { projects, runs } from "../db/schema";

export const ProjectSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    type: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    created_by: z.string().nullable(),
    permissions: z.array(z.any()),
    bookmark: z.boolean(),
    retention_days: z.number().int().nullable().openapi({
      description: "Days a record is kept after its created_at; null: for ever. Older records are hidden from searches at once and erased by the hourly expiry.",
    }),
  })
  .openapi("Project");

export const RunSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    project_id: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    created_by: z.string().nullable(),
    task_type: z.union([z.number(), z.string()]).nullable().optional(),
    has_user_created_sessions: z.boolean().optional(),
  })
  .openapi("Run");

export function projectShape(row: typeof projects.$inferSelect): z.infer<typeof ProjectSchema> {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    created_at: microsToIso(row.createdAt),
    updated_at: microsToIso(row.updatedAt),
    created_by: row.createdBy,
    permissions: [],
    bookmark: false,
    retention_days: row.retentionDays,
  };
}

export function runShape(row: typeof runs.$inferSelect): z.infer<typeof RunSchema> {
  const taskType = row.taskType === null ? null : /^\d+$/.test(row.taskType) ? Number(row.taskType) : row.taskType;
  return {
    id: row.id,
    name: row.name,
    project_id: row.projectId,
    created_at: microsToIso(row.createdAt),
    updated_at: microsToIso(row.updatedAt),
    created_by: row.createdBy,
    ...(row.kind === "experiment" ? { task_type: taskType } : { has_user_created_sessions: false }),
  };
}
