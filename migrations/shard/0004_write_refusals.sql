-- Refusals a write batch raises on itself (src/ingest/write-guards.ts). D1 has no interactive
-- transactions, so a check whose answer must stop the batch it runs in inserts a row here when
-- it fails; the trigger of that reason aborts the batch with a message the worker maps to an
-- answer. The table never holds a row.
CREATE TABLE `write_refusals` (
	`reason` text NOT NULL
);
--> statement-breakpoint
-- A record's parent_id would make it its own ancestor, or its chain deeper than 256 levels (422).
CREATE TRIGGER `write_refusals_parent_chain`
BEFORE INSERT ON `write_refusals`
WHEN NEW.`reason` = 'record_parent_chain'
BEGIN
  SELECT RAISE(ABORT, 'record_parent_chain');
END;
--> statement-breakpoint
-- A client's write reached a copy of the project that a move is still filling (a route cached
-- from before the move): the worker reads the route afresh and retries (or answers 503).
CREATE TRIGGER `write_refusals_project_importing`
BEFORE INSERT ON `write_refusals`
WHEN NEW.`reason` = 'project_not_on_shard'
BEGIN
  SELECT RAISE(ABORT, 'project_not_on_shard');
END;
