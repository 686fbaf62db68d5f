-- The catalog's migration 0012 (migrations/0012_model_prices.sql), for a data shard: which cost
-- and token values of a record the service derived (price overrides stay in the catalog).
ALTER TABLE `records` ADD `derived_metrics` integer DEFAULT 0 NOT NULL;
