/// <reference types="node" />
/**
 * `npm run provision`: creates on Cloudflare what wrangler.toml binds (D1 databases, queues and
 * their dead-letter queues, R2 buckets), writes their ids into the git-ignored deploy config
 * (wrangler.production.toml), applies the catalog and shard migrations, and sets TOKEN_SECRET once.
 * Idempotent: run it again after pulling a change that binds something new. Then `npm run deploy`.
 * docs/deploying.md.
 *
 *   npx wrangler login        # or export CLOUDFLARE_API_TOKEN=... (and CLOUDFLARE_ACCOUNT_ID)
 *   npm run provision
 */
import { parseArgs } from "node:util";
import { ProvisionError, provision } from "./lib/provision";

const { values } = parseArgs({ options: { config: { type: "string" } }, strict: true });
try {
  const report = await provision({ log: (line) => process.stderr.write(`[provision] ${line}\n`), ...(values.config ? { configName: values.config } : {}) });
  process.stdout.write(`${JSON.stringify(report)}\n`);
} catch (error) {
  process.stderr.write(`${error instanceof ProvisionError ? `${error.message}\n${error.output}` : String(error)}\n`);
  process.exit(1);
}
