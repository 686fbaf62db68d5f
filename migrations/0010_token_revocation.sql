-- Revocation without SQL (issue 19 point 10; src/auth/token-revocation.ts): bearer tokens ended by
-- POST /v2/logout, kept until they expire, and a per-user token generation that a password
-- reset moves on (ending every token issued before).
CREATE TABLE `revoked_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `revoked_tokens_expiry` ON `revoked_tokens` (`expires_at`);--> statement-breakpoint
ALTER TABLE `users` ADD `token_generation` integer DEFAULT 0 NOT NULL;
