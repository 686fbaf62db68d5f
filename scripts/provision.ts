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
 *
 * Sized for a stated load: `--spans-per-day N --retention-days D [--bytes-per-span B]` first adds
 * to wrangler.toml the data shards that load needs (scripts/lib/shard-sizing.ts), then creates
 * them with the rest; `--plan` only prints the sizing and what it would add, and calls nothing.
 */
import { parseArgs } from "node:util";
import { ProvisionError, provision, sizeShards } from "./lib/provision";
import { SizingError, sizingRequestOf } from "./lib/shard-sizing";

const { values } = parseArgs({
  options: {
    config: { type: "string" },
    "spans-per-day": { type: "string" },
    "retention-days": { type: "string" },
    "bytes-per-span": { type: "string" },
    plan: { type: "boolean", default: false },
  },
  strict: true,
});

try {
  const sizing = sizingRequestOf({ spansPerDay: values["spans-per-day"], retentionDays: values["retention-days"], bytesPerSpan: values["bytes-per-span"], plan: values.plan });
  if (sizing && values.plan) {
    process.stdout.write(`${JSON.stringify({ sizing: sizeShards(sizing, true) })}\n`);
  } else {
    const report = await provision({ log: (line) => process.stderr.write(`[provision] ${line}\n`), ...(values.config ? { configName: values.config } : {}), ...(sizing ? { sizing } : {}) });
    process.stdout.write(`${JSON.stringify(report)}\n`);
  }
} catch (error) {
  if (error instanceof SizingError) process.stderr.write(`${error.message}\n`);
  else process.stderr.write(`${error instanceof ProvisionError ? `${error.message}\n${error.output}` : String(error)}\n`);
  process.exit(1);
}
