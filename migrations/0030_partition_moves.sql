-- Moves of one closed partition of a project to another shard (issue 32, docs/sharding.md
-- "Moving a partition"): a move row names the partition it moves; null is a move of the whole
-- project, as every row written before this migration. One open move per project still (the
-- unique index project_moves_open), whichever kind. No row of data is touched.
ALTER TABLE `project_moves` ADD `partition_id` text;
