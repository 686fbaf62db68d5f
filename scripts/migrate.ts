/// <reference types="node" />
/**
 * `npm run db:migrate`: applies the migrations of every database wrangler.toml declares (the
 * catalog's `migrations/` for DB, `migrations/shard/` for each data shard), locally by default.
 *
 *   npm run db:migrate                      # the local databases of npm start
 *   npm run db:migrate -- --persist-to DIR  # local databases kept in DIR
 *   npm run db:migrate -- --remote          # the deployed databases (wrangler login first)
 */
import { parseArgs } from "node:util";
import { type D1Target, WranglerError, applyMigrations, d1Bindings } from "./lib/wrangler";

const { values } = parseArgs({ options: { remote: { type: "boolean" }, "persist-to": { type: "string" } }, strict: true });
const target: D1Target = values.remote ? { remote: true } : { remote: false, ...(values["persist-to"] ? { persistTo: values["persist-to"] } : {}) };
try {
  await applyMigrations(target);
  process.stdout.write(`${JSON.stringify({ migrated: d1Bindings(), target: values.remote ? "remote" : "local" })}\n`);
} catch (error) {
  process.stderr.write(`${error instanceof WranglerError ? `${error.message}\n${error.output}` : String(error)}\n`);
  process.exit(1);
}
