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
import { parseArgs } from "node:util";
import {
  AdminError,
  createApiKeyCommand,
  createOrganizationCommand,
  createUserCommand,
  deleteUserCommand,
  resetPasswordCommand,
  revokeApiKeyCommand,
  type Role,
  setDefaultRetentionCommand,
  setRoleCommand,
} from "./lib/admin-commands";
import { readPassword } from "./lib/read-password";
import { exportShardCommand, importShardCommand } from "./lib/backup-commands";
import { moveProjectCommand, moveStatusCommand } from "./lib/move-commands";
import { rollPartitionCommand } from "./lib/partition-commands";
import { isPartitionRef, movePartitionCommand } from "./lib/partition-move-commands";
import { shardsReport } from "./lib/shard-report";
import { closeLocalD1 } from "./lib/local-d1";
import { type D1Target, WranglerError } from "./lib/wrangler";

const USAGE = `Usage: npm run --silent admin -- <command> [options] [--local | --remote] [--persist-to DIR]

Commands:
  create-org      --name NAME
  create-user     --org ORGANIZATION_ID --email EMAIL --role admin|member
                  the password is asked for (not echoed), or read from standard input;
                  --password PASSWORD still works but shows it to shell history and \`ps\`
  create-api-key  --user USER_ID          prints the key (once) and its key_id
  revoke-api-key  --key KEY_ID            ends the key and the tokens exchanged from it
  delete-user     --user USER_ID          removes the user, their keys and tokens (not their data)
  set-role        --user USER_ID --role admin|member
  reset-password  --user USER_ID          new password asked for, or read from standard input;
                  ends every bearer token of the user (API keys stay)
                  revocations take effect within 5 s on every instance of the service
  shards          each database's size, records and projects (docs/sharding.md)
  default-retention --org ORGANIZATION_ID --days DAYS|none
                  the retention new projects of the organization take (docs/retention.md)
  move-project    --project PROJECT_ID --to SHARD [--wait] [--timeout SECONDS] [--url URL]
                  moves the project's records to another shard while the service runs
                  (docs/sharding.md, "Moving a project"); again on a paused move: resumes it
  move-status     --project PROJECT_ID | --move MOVE_ID   a move's phase and progress
  move-partition  --project PROJECT_ID --partition ID|SEQ --to SHARD [--wait] [--timeout S] [--url URL]
                  moves one closed partition to a shard holding nothing of the project, online
                  (docs/sharding.md, "Moving a partition"); again on a paused move: resumes it
  roll-partition  --project PROJECT_ID    closes the project's open partition and opens a new one
                  on the shard with the most room (docs/partitions.md)
  export-shard    --shard BINDING --output FILE   the shard's tables as SQL, without the text index
  import-shard    --shard BINDING --file FILE     into an empty migrated shard; rebuilds the text
                  index (docs/sharding.md, "Backups")

Where:
  --local            the local database of \`npm start\` / \`wrangler dev\` (default)
  --persist-to DIR   a local database kept in DIR (as \`wrangler dev --persist-to DIR\`)
  --remote           the deployed database (wrangler must be logged in, or CLOUDFLARE_API_TOKEN set)

Each command prints one JSON object: {"organization_id"}, {"user_id"}, {"api_key", "key_id"}
(the key is shown once, only its hash is stored), {"shards": [{"shard", "size_bytes", "records", "projects"}]},
{"organization_id", "default_retention_days"} (default-retention),
{"move_id", "phase", "status", "progress", ...} (move-project, move-partition, move-status),
{"project_id", "closed", "opened", "shard"} (roll-partition),
{"shard", "file", "tables"} (export-shard), {"shard", "file", "records", ...} (import-shard).

move-project --url: the local worker to start the move at once (default http://127.0.0.1:8787,
npm start's address); deployed, the worker's minutely cron starts it. --wait: poll until the move
is over (at most --timeout seconds, default 3600).`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MIN_PASSWORD_LENGTH = 8;

class UsageError extends Error {}

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required`);
  return value;
}

function uuidOption(values: Record<string, unknown>, name: string): string {
  const value = required(values, name).trim().toLowerCase();
  if (!UUID.test(value)) throw new UsageError(`--${name} must be a UUID, got ${JSON.stringify(value)}`);
  return value;
}

function bindingOption(values: Record<string, unknown>, name: string): string {
  const value = required(values, name).trim();
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(value)) throw new UsageError(`--${name} must be a D1 binding name such as SHARD_0, got ${JSON.stringify(value)}`);
  return value;
}

function roleOption(values: Record<string, unknown>): Role {
  const role = required(values, "role");
  if (role !== "admin" && role !== "member") throw new UsageError(`--role must be admin or member, got ${JSON.stringify(role)}`);
  return role;
}

function checkedPassword(password: string): string {
  if (password.length < MIN_PASSWORD_LENGTH) throw new UsageError(`the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  return password;
}

function targetOf(values: Record<string, unknown>): D1Target {
  if (values.remote && values.local) throw new UsageError("--local and --remote exclude each other");
  if (values.remote && values["persist-to"]) throw new UsageError("--persist-to applies to local databases only");
  if (values.remote) return { remote: true };
  const persistTo = values["persist-to"];
  return typeof persistTo === "string" ? { remote: false, persistTo } : { remote: false };
}

async function main(argv: string[]): Promise<Record<string, unknown>> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      name: { type: "string" },
      org: { type: "string" },
      email: { type: "string" },
      password: { type: "string" },
      role: { type: "string" },
      user: { type: "string" },
      key: { type: "string" },
      days: { type: "string" },
      project: { type: "string" },
      move: { type: "string" },
      partition: { type: "string" },
      to: { type: "string" },
      url: { type: "string" },
      wait: { type: "boolean" },
      timeout: { type: "string" },
      shard: { type: "string" },
      output: { type: "string" },
      file: { type: "string" },
      local: { type: "boolean" },
      remote: { type: "boolean" },
      "persist-to": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? "a command is required" : `one command expected, got: ${positionals.join(" ")}`);
  const target = targetOf(values);
  const command = positionals[0];
  switch (command) {
    case "create-org": {
      const name = required(values, "name").trim();
      if (name.length > 256) throw new UsageError("--name must be at most 256 characters");
      return createOrganizationCommand(name, target);
    }
    case "create-user": {
      const organizationId = uuidOption(values, "org");
      const email = required(values, "email").trim();
      if (!EMAIL.test(email)) throw new UsageError(`--email must be an email address, got ${JSON.stringify(email)}`);
      const role = roleOption(values);
      let password: string;
      if (values.password !== undefined) {
        process.stderr.write("warning: --password shows the password to shell history and the process list; leave it out to be asked for it, or pipe it on standard input\n");
        password = values.password;
      } else {
        password = await readPassword("Password for the new user: ");
      }
      return createUserCommand({ organizationId, email, password: checkedPassword(password), role }, target);
    }
    case "create-api-key":
      return createApiKeyCommand(uuidOption(values, "user"), target);
    case "revoke-api-key":
      return revokeApiKeyCommand(uuidOption(values, "key"), target);
    case "delete-user":
      return deleteUserCommand(uuidOption(values, "user"), target);
    case "set-role":
      return setRoleCommand(uuidOption(values, "user"), roleOption(values), target);
    case "reset-password": {
      if (values.password !== undefined) throw new UsageError("reset-password reads the password from standard input or a prompt, never from the command line");
      const userId = uuidOption(values, "user");
      return resetPasswordCommand(userId, checkedPassword(await readPassword("New password: ")), target);
    }
    case "default-retention": {
      const organizationId = uuidOption(values, "org");
      const days = required(values, "days").trim();
      if (days === "none") return setDefaultRetentionCommand(organizationId, null, target);
      if (!/^\d+$/.test(days) || Number(days) < 1 || Number(days) > 3650) throw new UsageError(`--days must be 1 to 3650 or none, got ${JSON.stringify(days)}`);
      return setDefaultRetentionCommand(organizationId, Number(days), target);
    }
    case "shards":
      return shardsReport(target) as unknown as Promise<Record<string, unknown>>;
    case "move-project": {
      const projectId = uuidOption(values, "project");
      const to = required(values, "to").trim();
      if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(to)) throw new UsageError(`--to must be a D1 binding name such as SHARD_1, got ${JSON.stringify(to)}`);
      const timeout = values.timeout === undefined ? 3600 : Number(values.timeout);
      if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError(`--timeout must be a positive number of seconds, got ${JSON.stringify(values.timeout)}`);
      const url = typeof values.url === "string" ? values.url.replace(/\/+$/, "") : "http://127.0.0.1:8787";
      return moveProjectCommand({ projectId, to, url, wait: values.wait === true, timeoutSeconds: timeout }, target);
    }
    case "move-partition": {
      const projectId = uuidOption(values, "project");
      const partition = required(values, "partition").trim();
      if (!isPartitionRef(partition)) throw new UsageError(`--partition must be a partition id (a UUID) or its number in the project (1, 2, ...), got ${JSON.stringify(partition)}`);
      const to = required(values, "to").trim();
      if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(to)) throw new UsageError(`--to must be a D1 binding name such as SHARD_1, got ${JSON.stringify(to)}`);
      const timeout = values.timeout === undefined ? 3600 : Number(values.timeout);
      if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError(`--timeout must be a positive number of seconds, got ${JSON.stringify(values.timeout)}`);
      const url = typeof values.url === "string" ? values.url.replace(/\/+$/, "") : "http://127.0.0.1:8787";
      return movePartitionCommand({ projectId, partition, to, url, wait: values.wait === true, timeoutSeconds: timeout }, target);
    }
    case "move-status": {
      if (values.move !== undefined) return moveStatusCommand({ moveId: uuidOption(values, "move") }, target);
      return moveStatusCommand({ projectId: uuidOption(values, "project") }, target);
    }
    case "roll-partition":
      return rollPartitionCommand(uuidOption(values, "project"), target);
    case "export-shard":
      return exportShardCommand(bindingOption(values, "shard"), required(values, "output"), target);
    case "import-shard":
      return importShardCommand(bindingOption(values, "shard"), required(values, "file"), target);
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

try {
  const result = await main(process.argv.slice(2));
  // The local databases are opened in this process (scripts/lib/local-d1.ts): closed before the
  // answer is printed, so that it is printed only once the write is on disk and nothing runs on.
  await closeLocalD1();
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (error) {
  if (error instanceof UsageError || (error instanceof TypeError && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS"))) {
    process.stderr.write(`error: ${error.message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  if (error instanceof AdminError) {
    process.stderr.write(`error: ${error.message}\n`);
  } else if (error instanceof WranglerError) {
    process.stderr.write(`error: ${error.message}\n${error.output ? `\nwrangler said:\n${error.output}\n` : ""}`);
  } else {
    process.stderr.write(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
}
