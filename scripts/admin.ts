/// <reference types="node" />
/**
 * Admin command line: creates organizations, users and API keys in the local D1 database that
 * `npm start` uses (also while it runs), in another local directory (--persist-to), or in the
 * deployed database (--remote). Each command prints one JSON object on stdout; errors go to
 * stderr with a non-zero exit status (1: the operation failed, 2: the command line is wrong).
 *
 *   npm run --silent admin -- create-org --name "Acme"
 *   npm run --silent admin -- create-user --org <organization_id> --email a@b.c --role admin   (password asked, or on stdin)
 *   npm run --silent admin -- create-api-key --user <user_id>
 *   npm run --silent admin -- revoke-api-key --key <key_id>
 *   npm run --silent admin -- delete-user --user <user_id>
 *   npm run --silent admin -- set-role --user <user_id> --role admin|member
 *   npm run --silent admin -- reset-password --user <user_id>   (password asked, or on stdin)
 *   npm run --silent admin -- shards
 *   npm run --silent admin -- default-retention --org <organization_id> --days 90|none
 *   npm run --silent admin -- move-project --project <project_id> --to SHARD_1 [--wait]
 *   npm run --silent admin -- move-status --project <project_id>
 *   npm run --silent admin -- move-partition --project <project_id> --partition <id|seq> --to SHARD_2 [--wait]
 */
import { runAdmin } from "./lib/admin-cli";
import { closeLocalD1 } from "./lib/local-d1";
import { readPassword } from "./lib/read-password";

const status = await runAdmin(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readPassword,
  // The local databases are opened in this process (scripts/lib/local-d1.ts): closed before the
  // answer is printed, so that it is printed only once the write is on disk and nothing runs on.
  beforeAnswer: closeLocalD1,
});
// A failed command may leave a local workerd open: the exit ends it. A successful one ends by itself.
if (status !== 0) process.exit(status);
