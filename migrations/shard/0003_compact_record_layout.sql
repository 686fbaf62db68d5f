-- The catalog's migration 0009 (migrations/0009_compact_record_layout.sql), for a data shard:
-- family keys in the search indexes and side rows, metric rows keyed in search order.
PRAGMA defer_foreign_keys = on;
--> statement-breakpoint
-- Every run's families (session, trace, span) get a small integer key, made for existing runs
-- here and for new runs by the `runs_families` trigger, in every database that holds a copy of
-- the run (the catalog creates runs, shards copy them).
CREATE TABLE `run_families` (
	`key` integer PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`record_type` text NOT NULL,
	`organization_id` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `run_families_run_type` ON `run_families` (`run_id`,`record_type`);
--> statement-breakpoint
CREATE INDEX `run_families_organization_type` ON `run_families` (`organization_id`,`record_type`);
--> statement-breakpoint
INSERT INTO `run_families` (`run_id`, `record_type`, `organization_id`)
SELECT ru.`id`, f.`column1`, ru.`organization_id` FROM `runs` AS ru, (VALUES ('session'), ('trace'), ('span')) AS f
ORDER BY ru.`id`, f.`column1`;
--> statement-breakpoint
CREATE TRIGGER `runs_families`
AFTER INSERT ON `runs`
BEGIN
  INSERT OR IGNORE INTO `run_families` (`run_id`, `record_type`, `organization_id`)
  VALUES (NEW.`id`, 'session', NEW.`organization_id`), (NEW.`id`, 'trace', NEW.`organization_id`), (NEW.`id`, 'span', NEW.`organization_id`);
END;
--> statement-breakpoint
-- Records carry their family key; the run-ordered indexes lead with it instead of
-- (run_id, record_type).
DROP INDEX `records_run_order`;
--> statement-breakpoint
DROP INDEX `records_run_id_order`;
--> statement-breakpoint
DROP INDEX `records_run_type_order`;
--> statement-breakpoint
DROP INDEX `records_run_model_order`;
--> statement-breakpoint
ALTER TABLE `records` ADD `family_key` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
UPDATE `records` SET `family_key` = (
  SELECT f.`key` FROM `run_families` AS f WHERE f.`run_id` = `records`.`run_id` AND f.`record_type` = `records`.`record_type`);
--> statement-breakpoint
CREATE INDEX `records_family_order` ON `records` (`family_key`,`created_at`,`id`);
--> statement-breakpoint
CREATE INDEX `records_family_id_order` ON `records` (`family_key`,`id`);
--> statement-breakpoint
CREATE INDEX `records_family_type_order` ON `records` (`family_key`,`type`,`created_at`,`id`);
--> statement-breakpoint
CREATE INDEX `records_family_model_order` ON `records` (`family_key`,`model`,`created_at`,`id`) WHERE model IS NOT NULL;
--> statement-breakpoint
-- Metadata and tag rows: the family key instead of the run, the family and the organization.
CREATE TABLE `__new_record_metadata` (
	`record_rid` integer NOT NULL,
	`record_id` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	`family_key` integer NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`record_rid`, `key`),
	FOREIGN KEY (`record_rid`) REFERENCES `records`(`rid`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_record_metadata` (`record_rid`, `record_id`, `key`, `value`, `family_key`, `created_at`)
SELECT m.`record_rid`, m.`record_id`, m.`key`, m.`value`, r.`family_key`, m.`created_at`
FROM `record_metadata` AS m JOIN `records` AS r ON r.`rid` = m.`record_rid`;
--> statement-breakpoint
DROP TABLE `record_metadata`;
--> statement-breakpoint
ALTER TABLE `__new_record_metadata` RENAME TO `record_metadata`;
--> statement-breakpoint
CREATE INDEX `record_metadata_family_key_value_order` ON `record_metadata` (`family_key`,`key`,`value`,`created_at`,`record_id`);
--> statement-breakpoint
CREATE TABLE `__new_record_tags` (
	`record_rid` integer NOT NULL,
	`record_id` text NOT NULL,
	`tag` text NOT NULL,
	`family_key` integer NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`record_rid`, `tag`),
	FOREIGN KEY (`record_rid`) REFERENCES `records`(`rid`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_record_tags` (`record_rid`, `record_id`, `tag`, `family_key`, `created_at`)
SELECT t.`record_rid`, t.`record_id`, t.`tag`, r.`family_key`, t.`created_at`
FROM `record_tags` AS t JOIN `records` AS r ON r.`rid` = t.`record_rid`;
--> statement-breakpoint
DROP TABLE `record_tags`;
--> statement-breakpoint
ALTER TABLE `__new_record_tags` RENAME TO `record_tags`;
--> statement-breakpoint
CREATE INDEX `record_tags_family_tag_order` ON `record_tags` (`family_key`,`tag`,`created_at`,`record_id`);
--> statement-breakpoint
-- Metric rows keyed in search order, their names in `metric_keys`, kept by triggers.
CREATE TABLE `metric_keys` (
	`key` integer PRIMARY KEY NOT NULL,
	`family_key` integer NOT NULL,
	`name` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `metric_keys_family_name` ON `metric_keys` (`family_key`,`name`);
--> statement-breakpoint
INSERT INTO `metric_keys` (`family_key`, `name`)
SELECT DISTINCT r.`family_key`, m.`name` FROM `record_metrics` AS m JOIN `records` AS r ON r.`rid` = m.`record_rid`
ORDER BY 1, 2;
--> statement-breakpoint
CREATE TABLE `__new_record_metrics` (
	`metric_key` integer NOT NULL,
	`value` real NOT NULL,
	`record_id` text NOT NULL,
	`record_rid` integer NOT NULL,
	PRIMARY KEY(`metric_key`, `value`, `record_id`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_record_metrics` (`metric_key`, `value`, `record_id`, `record_rid`)
SELECT k.`key`, m.`value`, m.`record_id`, m.`record_rid`
FROM `record_metrics` AS m JOIN `records` AS r ON r.`rid` = m.`record_rid`
JOIN `metric_keys` AS k ON k.`family_key` = r.`family_key` AND k.`name` = m.`name`;
--> statement-breakpoint
DROP TABLE `record_metrics`;
--> statement-breakpoint
ALTER TABLE `__new_record_metrics` RENAME TO `record_metrics`;
--> statement-breakpoint
-- The metric rows follow the record's `metrics` JSON: numbers only, one row per name. The
-- update trigger finds the old rows through the old JSON (the table has no key by record). The
-- statement that fires a trigger imposes its own conflict policy on the trigger's statements
-- (an upsert's is ABORT, so an INSERT OR IGNORE here would abort it): they test for the row
-- instead.
CREATE TRIGGER `record_metrics_on_insert`
AFTER INSERT ON `records`
WHEN NEW.`metrics` <> '{}'
BEGIN
  INSERT INTO `metric_keys` (`family_key`, `name`)
  SELECT NEW.`family_key`, m.`key` FROM json_each(NEW.`metrics`) AS m
  WHERE m.`type` IN ('integer', 'real')
    AND NOT EXISTS (SELECT 1 FROM `metric_keys` AS k WHERE k.`family_key` = NEW.`family_key` AND k.`name` = m.`key`);
  INSERT INTO `record_metrics` (`metric_key`, `value`, `record_id`, `record_rid`)
  SELECT k.`key`, m.`value`, NEW.`id`, NEW.`rid`
  FROM json_each(NEW.`metrics`) AS m
  JOIN `metric_keys` AS k ON k.`family_key` = NEW.`family_key` AND k.`name` = m.`key`
  WHERE m.`type` IN ('integer', 'real')
    AND NOT EXISTS (SELECT 1 FROM `record_metrics` AS x WHERE x.`metric_key` = k.`key` AND x.`value` = m.`value` AND x.`record_id` = NEW.`id`);
END;
--> statement-breakpoint
CREATE TRIGGER `record_metrics_on_update`
AFTER UPDATE OF `metrics` ON `records`
WHEN OLD.`metrics` IS NOT NEW.`metrics`
BEGIN
  DELETE FROM `record_metrics` WHERE (`metric_key`, `value`, `record_id`) IN (
    SELECT k.`key`, m.`value`, OLD.`id`
    FROM json_each(OLD.`metrics`) AS m
    JOIN `metric_keys` AS k ON k.`family_key` = OLD.`family_key` AND k.`name` = m.`key`
    WHERE m.`type` IN ('integer', 'real'));
  INSERT INTO `metric_keys` (`family_key`, `name`)
  SELECT NEW.`family_key`, m.`key` FROM json_each(NEW.`metrics`) AS m
  WHERE m.`type` IN ('integer', 'real')
    AND NOT EXISTS (SELECT 1 FROM `metric_keys` AS k WHERE k.`family_key` = NEW.`family_key` AND k.`name` = m.`key`);
  INSERT INTO `record_metrics` (`metric_key`, `value`, `record_id`, `record_rid`)
  SELECT k.`key`, m.`value`, NEW.`id`, NEW.`rid`
  FROM json_each(NEW.`metrics`) AS m
  JOIN `metric_keys` AS k ON k.`family_key` = NEW.`family_key` AND k.`name` = m.`key`
  WHERE m.`type` IN ('integer', 'real')
    AND NOT EXISTS (SELECT 1 FROM `record_metrics` AS x WHERE x.`metric_key` = k.`key` AND x.`value` = m.`value` AND x.`record_id` = NEW.`id`);
END;
--> statement-breakpoint
CREATE TRIGGER `record_metrics_on_delete`
AFTER DELETE ON `records`
WHEN OLD.`metrics` <> '{}'
BEGIN
  DELETE FROM `record_metrics` WHERE (`metric_key`, `value`, `record_id`) IN (
    SELECT k.`key`, m.`value`, OLD.`id`
    FROM json_each(OLD.`metrics`) AS m
    JOIN `metric_keys` AS k ON k.`family_key` = OLD.`family_key` AND k.`name` = m.`key`
    WHERE m.`type` IN ('integer', 'real'));
END;
