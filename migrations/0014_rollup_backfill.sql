CREATE TABLE `rollup_backfill` (
	`family` text PRIMARY KEY NOT NULL,
	`after_rid` integer NOT NULL,
	`until_rid` integer NOT NULL
);
--> statement-breakpoint
-- Records written before migration 0013's triggers get their roll-ups from the backfill
-- (src/maintenance/backfill-rollups.ts): traces first, then sessions, up to the last rid now.
INSERT INTO `rollup_backfill` (`family`, `after_rid`, `until_rid`)
SELECT f.`column1`, 0, coalesce((SELECT max(`rid`) FROM `records`), 0) FROM (VALUES ('trace'), ('session')) AS f;
