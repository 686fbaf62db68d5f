-- The catalog's migration 0022 for data shards: held streaming updates keep the masked copies
-- of their input and output (redaction in shadow mode, issue 33).
ALTER TABLE `record_patches` ADD `redacted_input` text;--> statement-breakpoint
ALTER TABLE `record_patches` ADD `redacted_output` text;
