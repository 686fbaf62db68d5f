-- Substring search by index (docs/search.md, "The text index"): a trigram index of every
-- record's name, input and output, in the database that holds the records. Inserts do not index
-- (ingest pays nothing for it): a cron catch-up indexes new records within a minute, searches
-- read the few not indexed yet as a scan would, and triggers keep the indexed rows exact through
-- every path that changes or removes text (streaming updates, PATCH, re-ingest, deletion,
-- expiry, a move's cleanup) in the same statement, hence the same atomic batch.
-- The same file is the catalog's migrations/0016_records_text_index.sql.
--
-- Contentless (the text stays in `records` only) with detail=none: the index answers "which
-- rows hold all these trigrams", a search confirms each candidate against the record's own
-- text, so positions and per-row sizes (columnsize) would be bytes no query reads. Trigrams are
-- folded (case_sensitive 0): one index serves both kinds of match. The fourth column holds the
-- record's family (run and kind) as one token of three private-use characters
-- (text_index_family_token in src/text-index/family-token.ts spells the same expression), so a
-- search confines its candidates to the run inside the index, before any row is read.
CREATE VIRTUAL TABLE `records_text` USING fts5(`name`, `input`, `output`, `family`, content='', detail=none, columnsize=0, tokenize='trigram case_sensitive 0');
--> statement-breakpoint
-- What the index covers: the rows with pending_through < rid <= indexed_through.
-- - Below: records that existed before the index, indexed by a chunked backfill (src/text-index/
--   backfill.ts) from the highest rid down; lowering pending_through indexes the rows it passes
--   (records_text_backfill_chunk).
-- - Above: records written since the last catch-up. Inserts do not index (ingest pays nothing for
--   the index); every cron run raises indexed_through (records_text_catch_up), which indexes the
--   rows it passes. A search reads the rows outside the range as a scan would (src/search/
--   text-driver.ts), so answers stay exact meanwhile.
-- Each move of a watermark is one statement with the index rows it writes: atomic whoever runs it
-- (the worker, or an operator through wrangler), and a retried or concurrent run only indexes
-- the next rows.
CREATE TABLE `records_text_backfill` (
	`id` integer PRIMARY KEY NOT NULL CHECK (`id` = 1),
	`pending_through` integer NOT NULL,
	`indexed_through` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `records_text_backfill` (`id`, `pending_through`, `indexed_through`) SELECT 1, coalesce(max(`rid`), 0), coalesce(max(`rid`), 0) FROM `records`;
--> statement-breakpoint
-- An insert indexes nothing, but for one case: `rid` is not AUTOINCREMENT, so once the highest
-- records are deleted a new record can take a rid the index already covers; it is indexed here.
-- (Otherwise the WHEN is one read of a one-row table: the body does not run.)
CREATE TRIGGER `records_text_on_reused_rid`
AFTER INSERT ON `records`
WHEN NEW.`rid` <= (SELECT `indexed_through` FROM `records_text_backfill` WHERE `id` = 1)
  AND NEW.`rid` > (SELECT `pending_through` FROM `records_text_backfill` WHERE `id` = 1)
BEGIN
  INSERT INTO `records_text` (`rowid`, `name`, `input`, `output`, `family`)
  VALUES (NEW.`rid`, NEW.`name`, NEW.`input`, NEW.`output`, char(57344 + (NEW.`family_key` / 40960000) % 6400, 57344 + (NEW.`family_key` / 6400) % 6400, 57344 + NEW.`family_key` % 6400));
END;
--> statement-breakpoint
-- A change of an indexed record's text (PATCH, re-ingest, streaming, a move's family) is indexed
-- at once; a re-sent record whose text is unchanged does not fire it. A contentless index forgets
-- a row by being told its old values: the trigger has them.
CREATE TRIGGER `records_text_on_update`
AFTER UPDATE OF `name`, `input`, `output`, `family_key` ON `records`
WHEN (OLD.`name` IS NOT NEW.`name` OR OLD.`input` IS NOT NEW.`input` OR OLD.`output` IS NOT NEW.`output` OR OLD.`family_key` IS NOT NEW.`family_key`)
  AND OLD.`rid` > (SELECT `pending_through` FROM `records_text_backfill` WHERE `id` = 1)
  AND OLD.`rid` <= (SELECT `indexed_through` FROM `records_text_backfill` WHERE `id` = 1)
BEGIN
  INSERT INTO `records_text` (`records_text`, `rowid`, `name`, `input`, `output`, `family`)
  VALUES ('delete', OLD.`rid`, OLD.`name`, OLD.`input`, OLD.`output`, char(57344 + (OLD.`family_key` / 40960000) % 6400, 57344 + (OLD.`family_key` / 6400) % 6400, 57344 + OLD.`family_key` % 6400));
  INSERT INTO `records_text` (`rowid`, `name`, `input`, `output`, `family`)
  VALUES (NEW.`rid`, NEW.`name`, NEW.`input`, NEW.`output`, char(57344 + (NEW.`family_key` / 40960000) % 6400, 57344 + (NEW.`family_key` / 6400) % 6400, 57344 + NEW.`family_key` % 6400));
END;
--> statement-breakpoint
CREATE TRIGGER `records_text_on_delete`
AFTER DELETE ON `records`
WHEN OLD.`rid` > (SELECT `pending_through` FROM `records_text_backfill` WHERE `id` = 1)
  AND OLD.`rid` <= (SELECT `indexed_through` FROM `records_text_backfill` WHERE `id` = 1)
BEGIN
  INSERT INTO `records_text` (`records_text`, `rowid`, `name`, `input`, `output`, `family`)
  VALUES ('delete', OLD.`rid`, OLD.`name`, OLD.`input`, OLD.`output`, char(57344 + (OLD.`family_key` / 40960000) % 6400, 57344 + (OLD.`family_key` / 6400) % 6400, 57344 + OLD.`family_key` % 6400));
END;
--> statement-breakpoint
CREATE TRIGGER `records_text_backfill_chunk`
AFTER UPDATE OF `pending_through` ON `records_text_backfill`
WHEN NEW.`pending_through` < OLD.`pending_through`
BEGIN
  INSERT INTO `records_text` (`rowid`, `name`, `input`, `output`, `family`)
  SELECT r.`rid`, r.`name`, r.`input`, r.`output`, char(57344 + (r.`family_key` / 40960000) % 6400, 57344 + (r.`family_key` / 6400) % 6400, 57344 + r.`family_key` % 6400)
  FROM `records` AS r WHERE r.`rid` > NEW.`pending_through` AND r.`rid` <= OLD.`pending_through`;
END;
--> statement-breakpoint
CREATE TRIGGER `records_text_catch_up`
AFTER UPDATE OF `indexed_through` ON `records_text_backfill`
WHEN NEW.`indexed_through` > OLD.`indexed_through`
BEGIN
  INSERT INTO `records_text` (`rowid`, `name`, `input`, `output`, `family`)
  SELECT r.`rid`, r.`name`, r.`input`, r.`output`, char(57344 + (r.`family_key` / 40960000) % 6400, 57344 + (r.`family_key` / 6400) % 6400, 57344 + r.`family_key` % 6400)
  FROM `records` AS r WHERE r.`rid` > OLD.`indexed_through` AND r.`rid` <= NEW.`indexed_through`;
END;
