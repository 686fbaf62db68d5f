-- The catalog's migration 0018 (migrations/0018_metric_preaggregates.sql), for a data shard.
-- Pre-aggregated metric cells (issue 21 point 4; docs/analytics.md, "Pre-aggregates"): per run,
-- hour of trace created_at and group (ungrouped, name, each tag, the value of the project's
-- declared analytics metadata key), the figures of metrics/search, recomputed from the records
-- by src/analytics/metric-cells.ts, never incremented. Writes only mark the hours they change:
-- the triggers below add (run, hour) to metric_dirty_hours on every path that writes or deletes
-- traces and spans (ingestion, merges, held patches, deletion chunks, expiry, a move's copy and
-- cleanup), one primary-key probe a row; the scheduled refresh recomputes dirty hours and reads
-- scan them meanwhile, so an answer is exact whatever is dirty. (ON CONFLICT DO NOTHING, not
-- INSERT OR IGNORE: an outer upsert's conflict policy would override OR IGNORE inside a trigger.)
CREATE TABLE `metric_cells` (
	`run_id` text NOT NULL,
	`hour` integer NOT NULL,
	`grouping` text NOT NULL,
	`group_value` text NOT NULL,
	`traces` integer NOT NULL,
	`metadata_key` text,
	PRIMARY KEY(`run_id`, `grouping`, `hour`, `group_value`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `metric_cell_values` (
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
CREATE TABLE `metric_cell_bins` (
	`run_id` text NOT NULL,
	`hour` integer NOT NULL,
	`grouping` text NOT NULL,
	`group_value` text NOT NULL,
	`bin` integer NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`run_id`, `grouping`, `hour`, `group_value`, `bin`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `metric_cell_sessions` (
	`run_id` text NOT NULL,
	`hour` integer NOT NULL,
	`grouping` text NOT NULL,
	`group_value` text NOT NULL,
	`session_id` text NOT NULL,
	PRIMARY KEY(`run_id`, `grouping`, `hour`, `group_value`, `session_id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `metric_dirty_hours` (
	`run_id` text NOT NULL,
	`hour` integer NOT NULL,
	PRIMARY KEY(`run_id`, `hour`)
) WITHOUT ROWID;
--> statement-breakpoint
-- The project's declared analytics metadata key, as its shard's refresh reads it (the catalog's
-- project_analytics_settings is the source; PUT .../analytics_settings writes both).
CREATE TABLE `metric_settings` (
	`project_id` text PRIMARY KEY NOT NULL,
	`metadata_key` text
);
--> statement-breakpoint
-- Traces written before these triggers: the backfill (src/analytics/metric-cells.ts) marks their
-- hours dirty, rids (after_rid, until_rid] a window at a time; until it is done, reads scan.
CREATE TABLE `metric_cell_backfill` (
	`id` integer PRIMARY KEY NOT NULL,
	`after_rid` integer NOT NULL,
	`until_rid` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `metric_cell_backfill` (`id`, `after_rid`, `until_rid`) VALUES (1, 0, coalesce((SELECT max(`rid`) FROM `records`), 0));
--> statement-breakpoint
CREATE TRIGGER `records_metric_cells_trace_insert`
AFTER INSERT ON `records` WHEN NEW.record_type = 'trace'
BEGIN
  INSERT INTO metric_dirty_hours (run_id, hour) VALUES (NEW.run_id, NEW.created_at / 3600000000) ON CONFLICT DO NOTHING;
END;
--> statement-breakpoint
CREATE TRIGGER `records_metric_cells_trace_update`
AFTER UPDATE ON `records`
WHEN NEW.record_type = 'trace' AND (OLD.metrics IS NOT NEW.metrics OR OLD.name IS NOT NEW.name OR OLD.status_code IS NOT NEW.status_code
  OR OLD.error_message IS NOT NEW.error_message OR OLD.session_id IS NOT NEW.session_id OR OLD.tags IS NOT NEW.tags
  OR OLD.user_metadata IS NOT NEW.user_metadata OR OLD.created_at IS NOT NEW.created_at OR OLD.run_id IS NOT NEW.run_id OR OLD.record_type IS NOT NEW.record_type)
BEGIN
  INSERT INTO metric_dirty_hours (run_id, hour) VALUES (OLD.run_id, OLD.created_at / 3600000000), (NEW.run_id, NEW.created_at / 3600000000) ON CONFLICT DO NOTHING;
END;
--> statement-breakpoint
CREATE TRIGGER `records_metric_cells_trace_delete`
AFTER DELETE ON `records` WHEN OLD.record_type = 'trace'
BEGIN
  INSERT INTO metric_dirty_hours (run_id, hour) VALUES (OLD.run_id, OLD.created_at / 3600000000) ON CONFLICT DO NOTHING;
END;
--> statement-breakpoint
-- A trace's span_count changes when a span comes, goes or changes trace: mark its trace's hour
-- (none when the trace is not written yet: its own insert marks it).
CREATE TRIGGER `records_metric_cells_span_insert`
AFTER INSERT ON `records` WHEN NEW.record_type = 'span' AND NEW.trace_id IS NOT NULL
BEGIN
  INSERT INTO metric_dirty_hours (run_id, hour)
  SELECT t.run_id, t.created_at / 3600000000 FROM records AS t WHERE t.project_id = NEW.project_id AND t.id = NEW.trace_id AND t.record_type = 'trace' ON CONFLICT DO NOTHING;
END;
--> statement-breakpoint
CREATE TRIGGER `records_metric_cells_span_update`
AFTER UPDATE OF trace_id, created_at ON `records` WHEN NEW.record_type = 'span' AND (OLD.trace_id IS NOT NEW.trace_id OR OLD.created_at IS NOT NEW.created_at)
BEGIN
  INSERT INTO metric_dirty_hours (run_id, hour)
  SELECT t.run_id, t.created_at / 3600000000 FROM records AS t WHERE t.project_id = NEW.project_id AND t.id IN (OLD.trace_id, NEW.trace_id) AND t.record_type = 'trace' ON CONFLICT DO NOTHING;
END;
--> statement-breakpoint
CREATE TRIGGER `records_metric_cells_span_delete`
AFTER DELETE ON `records` WHEN OLD.record_type = 'span' AND OLD.trace_id IS NOT NULL
BEGIN
  INSERT INTO metric_dirty_hours (run_id, hour)
  SELECT t.run_id, t.created_at / 3600000000 FROM records AS t WHERE t.project_id = OLD.project_id AND t.id = OLD.trace_id AND t.record_type = 'trace' ON CONFLICT DO NOTHING;
END;
--> statement-breakpoint
-- Cost when an llm span's model and token counts arrive in different writes (contract, section 9:
-- "computed when the model and both token counts are first known"). A write that names a model
-- with a known price but cannot compute a cost itself (no token counts in it) records the price
-- it resolved here (src/ingest/write-records.ts); when a later merge brings the missing part, the
-- trigger below computes the cost from it in the same statement, exactly as ingestion does
-- (tokens x price per 1M), marks it derived, and the roll-up and metric-row triggers follow.
CREATE TABLE `span_model_prices` (
	`organization_id` text NOT NULL,
	`model` text NOT NULL,
	`input_price` real NOT NULL,
	`output_price` real NOT NULL,
	PRIMARY KEY(`organization_id`, `model`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TRIGGER `records_cost_when_known`
AFTER UPDATE OF metrics, model ON `records`
WHEN NEW.record_type = 'span' AND NEW.type = 'llm' AND NEW.model IS NOT NULL AND NEW.metrics ->> '$.cost' IS NULL
  AND json_type(NEW.metrics, '$.num_input_tokens') IN ('integer', 'real') AND json_type(NEW.metrics, '$.num_output_tokens') IN ('integer', 'real')
  AND EXISTS (SELECT 1 FROM span_model_prices AS p WHERE p.organization_id = NEW.organization_id AND p.model = NEW.model)
BEGIN
  UPDATE records SET
    metrics = json_set(records.metrics, '$.cost', (SELECT ((NEW.metrics ->> '$.num_input_tokens') * p.input_price + (NEW.metrics ->> '$.num_output_tokens') * p.output_price) / 1000000
      FROM span_model_prices AS p WHERE p.organization_id = NEW.organization_id AND p.model = NEW.model)),
    derived_metrics = records.derived_metrics | 1
  WHERE records.rid = NEW.rid;
  INSERT INTO run_columns (run_id, record_type, column_id) VALUES (NEW.run_id, 'span', 'metrics/cost') ON CONFLICT DO NOTHING;
END;
