-- The data shards carry the same table (migrations/shard/0014_upkeep_lease.sql): the catalog holds records too.
-- The upkeep of derived data (text index catch-up, metric cell refresh, backfills) follows the
-- writes through the upkeep queue (src/upkeep, docs/search.md "The text index"). One row per
-- database coordinates it:
-- - `requested_seq`: raised by every write that leaves work behind (one tiny UPDATE after the
--   write); a run that finds it changed since it last looked runs again before it stops.
-- - `pending_since` (ms): a message is on its way, or a run (chain) is going, since then. A write
--   that finds it NULL (or stale: the chain died) sets it and sends the one message: coalesced,
--   one pending message per database however many writes. `pending_token` names the write
--   that set it, so exactly that one sends (two writes in the same millisecond included).
-- - `lease_until` / `lease_token`: the run that holds the database until then; a second run
--   (another message, the cron) that finds a live lease leaves the work to it. A lease that
--   expired (its isolate died) is taken over.
-- - `failures` / `last_error`: consecutive failed runs, for operators (docs/operations.md).
CREATE TABLE `upkeep_state` (
  `id` integer PRIMARY KEY NOT NULL CHECK (`id` = 1),
  `requested_seq` integer DEFAULT 0 NOT NULL,
  `pending_since` integer,
  `pending_token` text,
  `lease_until` integer,
  `lease_token` text,
  `failures` integer DEFAULT 0 NOT NULL,
  `last_error` text
);
--> statement-breakpoint
INSERT INTO `upkeep_state` (`id`) VALUES (1);
