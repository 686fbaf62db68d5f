CREATE TABLE `model_price_overrides` (
	`organization_id` text NOT NULL,
	`name` text NOT NULL,
	`input_price` real NOT NULL,
	`output_price` real NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`organization_id`, `name`),
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `records` ADD `derived_metrics` integer DEFAULT 0 NOT NULL;