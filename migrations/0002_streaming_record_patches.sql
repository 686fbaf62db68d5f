CREATE TABLE `record_patches` (
	`record_id` text NOT NULL,
	`run_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL,
	`record_type` text NOT NULL,
	`input` text,
	`input_is_json` integer,
	`output` text,
	`output_is_json` integer,
	`status_code` integer,
	`tags` text,
	`is_complete` integer,
	`duration_ns` real,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`record_id`, `run_id`),
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `record_patches_created` ON `record_patches` (`created_at`);