ALTER TABLE `organizations` ADD `default_retention_days` integer;--> statement-breakpoint
ALTER TABLE `projects` ADD `retention_days` integer;--> statement-breakpoint
CREATE INDEX `projects_retention` ON `projects` (`retention_days`) WHERE retention_days IS NOT NULL;--> statement-breakpoint
CREATE INDEX `org_jobs_active` ON `org_jobs` (`job_name`,`organization_id`) WHERE status IN ('queued', 'running');