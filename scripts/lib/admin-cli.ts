/// <reference types="node" />
/**
 * The admin command line's commands, options and answers (scripts/admin.ts is the process around
 * them; the usage and each command: there). Its input and output are passed in, so that one
 * process can run several commands: test/node/admin-cli.test.ts runs most of its commands so, in
 * the test's own process and its one local workerd, instead of a Node process, tsx's transpile
 * and a workerd per command (about 4 CPU s each; issue 36), and keeps real processes for what is
 * about the process (exit status, stdout holding the one answer, the password on stdin).
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
} from "./admin-commands";
import { exportShardCommand, importShardCommand } from "./backup-commands";
import { moveProjectCommand, moveStatusCommand } from "./move-commands";
import { rollPartitionCommand } from "./partition-commands";
import { isPartitionRef, movePartitionCommand } from "./partition-move-commands";
import { shardsReport } from "./shard-report";
import { type D1Target, WranglerError } from "./wrangler";

/** Where a command reads its password and writes its answer and errors. */
export interface AdminIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** The password, never from the arguments (scripts/lib/read-password.ts in the process). */
  readPassword(prompt: string): Promise<string>;
  /** Runs after a command succeeded and before its answer is printed (the process closes its local databases). */
  beforeAnswer?(): Promise<void>;
}

export const USAGE = `Usage: npm run --silent admin -- <command> [options] [--local | --remote] [--persist-to DIR]

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

/** A move's target shard, the worker to start it at (`--url`) and how long `--wait` waits (move-project, move-partition). */
function moveOptions(values: Record<string, unknown>): { to: string; url: string; timeoutSeconds: number } {
  const to = bindingOption(values, "to");
  const timeoutSeconds = values.timeout === undefined ? 3600 : Number(values.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) throw new UsageError(`--timeout must be a positive number of seconds, got ${JSON.stringify(values.timeout)}`);
  const url = typeof values.url === "string" ? values.url.replace(/\/+$/, "") : "http://127.0.0.1:8787";
  return { to, url, timeoutSeconds };
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

/** The command's answer, or `undefined` for --help (the usage, already written). */
async function main(argv: string[], io: AdminIo): Promise<Record<string, unknown> | undefined> {
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
    io.stdout(`${USAGE}\n`);
    return undefined;
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
        io.stderr("warning: --password shows the password to shell history and the process list; leave it out to be asked for it, or pipe it on standard input\n");
        password = values.password;
      } else {
        password = await io.readPassword("Password for the new user: ");
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
      return resetPasswordCommand(userId, checkedPassword(await io.readPassword("New password: ")), target);
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
      const { to, url, timeoutSeconds } = moveOptions(values);
      return moveProjectCommand({ projectId, to, url, wait: values.wait === true, timeoutSeconds }, target);
    }
    case "move-partition": {
      const projectId = uuidOption(values, "project");
      const partition = required(values, "partition").trim();
      if (!isPartitionRef(partition)) throw new UsageError(`--partition must be a partition id (a UUID) or its number in the project (1, 2, ...), got ${JSON.stringify(partition)}`);
      const { to, url, timeoutSeconds } = moveOptions(values);
      return movePartitionCommand({ projectId, partition, to, url, wait: values.wait === true, timeoutSeconds }, target);
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

/**
 * Runs one command line (the arguments after `admin --`) and returns its exit status: 0 with one
 * JSON object on stdout, 1 when the operation failed, 2 when the command line is wrong (the
 * usage on stderr); nothing on stdout unless 0.
 */
export async function runAdmin(argv: string[], io: AdminIo): Promise<number> {
  try {
    const result = await main(argv, io);
    if (result === undefined) return 0;
    await io.beforeAnswer?.();
    io.stdout(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError || (error instanceof TypeError && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS"))) {
      io.stderr(`error: ${error.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (error instanceof AdminError) {
      io.stderr(`error: ${error.message}\n`);
    } else if (error instanceof WranglerError) {
      io.stderr(`error: ${error.message}\n${error.output ? `\nwrangler said:\n${error.output}\n` : ""}`);
    } else {
      io.stderr(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    }
    return 1;
  }
}
