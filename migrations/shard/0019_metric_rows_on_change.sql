-- The catalog's migration 0028 for data shards.
-- The metric rows of a record whose `metrics` change (issue 34, item 6): the update trigger deleted
-- every row of the old JSON and inserted every row of the new, so a scorer adding one metric to a
-- record with ten rewrote eleven rows and their keys. It now deletes only the old (name, value)
-- pairs the new JSON no longer holds (every one when the record changed family, id or rid, as
-- before) and inserts only the missing ones (the insert already skipped rows present). Same rows
-- after every update; no row of data is touched by this migration.

DROP TRIGGER `record_metrics_on_update`;--> statement-breakpoint
CREATE TRIGGER `record_metrics_on_update`
AFTER UPDATE OF `metrics` ON `records`
WHEN OLD.`metrics` IS NOT NEW.`metrics`
BEGIN
  DELETE FROM `record_metrics` WHERE (`metric_key`, `value`, `record_id`) IN (
    SELECT k.`key`, m.`value`, OLD.`id`
    FROM json_each(OLD.`metrics`) AS m
    JOIN `metric_keys` AS k ON k.`family_key` = OLD.`family_key` AND k.`name` = m.`key`
    WHERE m.`type` IN ('integer', 'real')
      AND NOT (OLD.`family_key` = NEW.`family_key` AND OLD.`id` = NEW.`id` AND OLD.`rid` = NEW.`rid`
        AND EXISTS (SELECT 1 FROM json_each(NEW.`metrics`) AS n WHERE n.`key` = m.`key` AND n.`type` IN ('integer', 'real') AND n.`value` = m.`value`)));
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
