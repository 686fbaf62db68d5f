-- The catalog's migration 0029 for data shards.
-- A closed partition wholly past its project's retention cut-off is erased as a unit (issue 32,
-- item 2; docs/partitions.md, "Erasing a partition"). Its records are found by partition: the
-- newest created_at of a partition is one seek of this index, and the erasure walks a range of it
-- (the first partition's records carry null or 1: two ranges). Safe on a database holding data:
-- an added nullable column rewrites no row, and the index is built over the rows present.
ALTER TABLE `shard_partitions` ADD `erasing_before` integer;--> statement-breakpoint
CREATE INDEX IF NOT EXISTS `records_project_partition` ON `records` (`project_id`,`partition_seq`,`created_at`);
