-- The catalog's migration 0021 (migrations/0021_metric_day_cells.sql), for a data shard.
-- Faster pre-aggregated reads (issue 21 point 4; docs/analytics.md, "Pre-aggregates"):
-- 1. Each hour cell keeps its own answer for the figures that do not add: its distinct sessions
--    and the histogram bins of its duration percentiles (p50/p90/p95/p99 by nearest rank), so a
--    bucket that is exactly one cell reads one row instead of its session ids and bins.
-- 2. Day cells beside the hour cells (same columns; `hour` is the first hour of the UTC day),
--    each the sum of its 24 hour cells, recomputed in the refresh batch that recomputes any of
--    them (src/analytics/metric-cells.ts), never incremented: so a day whose hours are all
--    unmarked is exact, and a 30-day window at 1-day buckets reads 30 cells per group, not 720.
-- Hour cells computed before this migration lack both: their hours are marked for the refresh
-- (the resumable, chunked recomputation), and reads scan them until it has run.
ALTER TABLE `metric_cells` ADD `sessions` integer;
--> statement-breakpoint
ALTER TABLE `metric_cells` ADD `p50_bin` integer;
--> statement-breakpoint
ALTER TABLE `metric_cells` ADD `p90_bin` integer;
--> statement-breakpoint
ALTER TABLE `metric_cells` ADD `p95_bin` integer;
--> statement-breakpoint
ALTER TABLE `metric_cells` ADD `p99_bin` integer;
--> statement-breakpoint
-- The refresh's reads and deletes of a chunk's hours (the primary key leads with grouping, name).
CREATE INDEX `metric_cell_values_hour` ON `metric_cell_values` (`run_id`, `hour`);
--> statement-breakpoint
CREATE TABLE `metric_day_cells` (
	`run_id` text NOT NULL,
	`hour` integer NOT NULL,
	`grouping` text NOT NULL,
	`group_value` text NOT NULL,
	`traces` integer NOT NULL,
	`sessions` integer,
	`p50_bin` integer,
	`p90_bin` integer,
	`p95_bin` integer,
	`p99_bin` integer,
	PRIMARY KEY(`run_id`, `grouping`, `hour`, `group_value`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `metric_day_cell_values` (
	`run_id` text NOT NULL,
	`hour` integer NOT NULL,
	`grouping` text NOT NULL,
	`group_value` text NOT NULL,
	`name` text NOT NULL,
	`n` integer NOT NULL,
	`total` real,
	`lo` real,
	`hi` real,
	`trues` integer NOT NULL,
	PRIMARY KEY(`run_id`, `grouping`, `name`, `hour`, `group_value`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `metric_day_cell_values_hour` ON `metric_day_cell_values` (`run_id`, `hour`);
--> statement-breakpoint
CREATE TABLE `metric_day_cell_bins` (
	`run_id` text NOT NULL,
	`hour` integer NOT NULL,
	`grouping` text NOT NULL,
	`group_value` text NOT NULL,
	`bin` integer NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`run_id`, `grouping`, `hour`, `group_value`, `bin`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `metric_day_cell_sessions` (
	`run_id` text NOT NULL,
	`hour` integer NOT NULL,
	`grouping` text NOT NULL,
	`group_value` text NOT NULL,
	`session_id` text NOT NULL,
	PRIMARY KEY(`run_id`, `grouping`, `hour`, `group_value`, `session_id`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `metric_dirty_hours` (`run_id`, `hour`) SELECT DISTINCT `run_id`, `hour` FROM `metric_cells` WHERE `grouping` = '' ON CONFLICT DO NOTHING;
