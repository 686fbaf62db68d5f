-- Alerts and notifications (issue 35; contract section 16; docs/alerts.md).
-- 1. Notification channels of an organization: a webhook (Standard Webhooks) or a Slack incoming
--    webhook. `secret_sealed` is the webhook's signing secret and `url_sealed` a Slack URL (which
--    is itself a credential), both AES-GCM sealed with a key derived from TOKEN_SECRET
--    (src/alerts/sealed-secrets.ts): never returned, never logged.
CREATE TABLE `notification_channels` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL REFERENCES `organizations`(`id`) ON DELETE cascade,
	`name` text NOT NULL,
	`type` text NOT NULL,
	`url` text NOT NULL,
	`url_sealed` text,
	`secret_sealed` text,
	`enabled` integer DEFAULT 1 NOT NULL,
	`disabled_reason` text,
	`consecutive_failures` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL
);--> statement-breakpoint
CREATE INDEX `notification_channels_organization` ON `notification_channels` (`organization_id`,`created_at`);--> statement-breakpoint
-- 2. Alert rules per project and run. `next_due_minute` (minutes since the epoch) is the next
--    minute the rule is due in; the cron reads `alert_rules_due` and moves it forward in the same
--    conditional statement that records the evaluation's state, so a second run of one minute
--    (redelivery, overlap) finds nothing due and never notifies twice.
CREATE TABLE `alert_rules` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`project_id` text NOT NULL REFERENCES `projects`(`id`) ON DELETE cascade,
	`run_id` text NOT NULL,
	`run_kind` text NOT NULL,
	`name` text NOT NULL,
	`metric` text NOT NULL,
	`filters` text NOT NULL,
	`window_minutes` integer NOT NULL,
	`comparison` text NOT NULL,
	`threshold` real NOT NULL,
	`warning_threshold` real,
	`evaluate_every_minutes` integer NOT NULL,
	`no_data` text NOT NULL,
	`renotify_minutes` integer,
	`enabled` integer NOT NULL,
	`created_at` integer NOT NULL,
	`created_minute` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`state` text DEFAULT 'ok' NOT NULL,
	`state_since` integer NOT NULL,
	`last_value` real,
	`last_evaluated_minute` integer,
	`last_notified_minute` integer,
	`last_error` text,
	`next_due_minute` integer NOT NULL
);--> statement-breakpoint
CREATE INDEX `alert_rules_project` ON `alert_rules` (`project_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `alert_rules_due` ON `alert_rules` (`next_due_minute`) WHERE `enabled` = 1;--> statement-breakpoint
CREATE TABLE `alert_rule_channels` (
	`rule_id` text NOT NULL REFERENCES `alert_rules`(`id`) ON DELETE cascade,
	`channel_id` text NOT NULL REFERENCES `notification_channels`(`id`) ON DELETE cascade,
	PRIMARY KEY(`rule_id`, `channel_id`)
);--> statement-breakpoint
CREATE INDEX `alert_rule_channels_channel` ON `alert_rule_channels` (`channel_id`);--> statement-breakpoint
-- 3. A rule's state changes, newest first by (rule, minute); one per evaluated minute at most.
CREATE TABLE `alert_history` (
	`rule_id` text NOT NULL REFERENCES `alert_rules`(`id`) ON DELETE cascade,
	`minute` integer NOT NULL,
	`state` text NOT NULL,
	`previous_state` text NOT NULL,
	`value` real,
	`threshold` real,
	`window_start` integer NOT NULL,
	`window_end` integer NOT NULL,
	`at` integer NOT NULL,
	PRIMARY KEY(`rule_id`, `minute`)
);--> statement-breakpoint
-- 4. Deliveries: one per notification and channel; `id` is the `webhook-id`, the same on every
--    attempt. The queue's message names it; attempts are claimed by a compare-and-set on
--    `attempts`, so a duplicate message never posts twice at once.
CREATE TABLE `alert_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`channel_id` text NOT NULL REFERENCES `notification_channels`(`id`) ON DELETE cascade,
	`rule_id` text,
	`minute` integer,
	`type` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`first_attempt_at` integer,
	`last_attempt_at` integer,
	`queued_at` integer
);--> statement-breakpoint
-- One delivery per rule, minute and channel: an evaluation replayed can add nothing.
CREATE UNIQUE INDEX `alert_deliveries_once` ON `alert_deliveries` (`rule_id`,`minute`,`channel_id`) WHERE `rule_id` IS NOT NULL;--> statement-breakpoint
CREATE INDEX `alert_deliveries_unqueued` ON `alert_deliveries` (`created_at`) WHERE `queued_at` IS NULL;--> statement-breakpoint
CREATE INDEX `alert_deliveries_channel` ON `alert_deliveries` (`channel_id`);--> statement-breakpoint
-- Pending deliveries whose retry message was lost (the cron sends it again), and old ones to remove.
CREATE INDEX `alert_deliveries_pending` ON `alert_deliveries` (`last_attempt_at`) WHERE `status` = 'pending';--> statement-breakpoint
CREATE INDEX `alert_deliveries_created` ON `alert_deliveries` (`created_at`);--> statement-breakpoint
-- 5. The delivery log: every attempt, the last 100 per channel kept.
CREATE TABLE `alert_delivery_attempts` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`channel_id` text NOT NULL REFERENCES `notification_channels`(`id`) ON DELETE cascade,
	`webhook_id` text NOT NULL,
	`type` text NOT NULL,
	`at` integer NOT NULL,
	`status` integer,
	`latency_ms` integer NOT NULL,
	`error` text
);--> statement-breakpoint
CREATE INDEX `alert_delivery_attempts_channel` ON `alert_delivery_attempts` (`channel_id`,`seq`);
