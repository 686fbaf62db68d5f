/**
 * `npm start` runs wrangler.toml's cron schedule itself (scripts/lib/local-cron.ts; issue 29,
 * point 2): the expressions are read from wrangler.toml and matched minute by minute in UTC.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configuredCrons, parseCron } from "../../scripts/lib/local-cron";
import { REPO_ROOT } from "../../scripts/lib/wrangler-config";

/** configuredCrons of a wrangler.toml holding `toml`. */
function cronsOf(toml: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), "local-cron-"));
  try {
    writeFileSync(join(dir, "wrangler.toml"), toml);
    return configuredCrons(join(dir, "wrangler.toml"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const at = (iso: string) => new Date(iso);

describe("the local cron schedule", () => {
  it("reads wrangler.toml's crons", () => {
    expect(configuredCrons()).toEqual(["17 * * * *", "* * * * *"]);
  });

  it("reads them as wrangler does, without loading wrangler (issue 36)", async () => {
    const { unstable_readConfig } = await import("wrangler");
    expect(configuredCrons()).toEqual(unstable_readConfig({ config: join(REPO_ROOT, "wrangler.toml") }).triggers?.crons ?? []);
    expect(cronsOf(`name = "x"\n[triggers]\ncrons = [\n  "0 * * * *", # hourly\n  '*/5 * * * *',\n]\n[assets]\ndirectory = "d"\n`)).toEqual(["0 * * * *", "*/5 * * * *"]);
    expect(cronsOf(`name = "x"\n[vars]\ncrons = ["1 * * * *"]\n`)).toEqual([]);
    expect(cronsOf(`[triggers] # none yet\ncrons = []\n`)).toEqual([]);
    expect(() => cronsOf(`[triggers]\ncrons = "* * * * *"\n`)).toThrow(/not an array of strings/);
    expect(() => cronsOf(`[triggers]\ncrons = ["* * * * *"\n`)).toThrow(/not an array of strings/);
  });

  it("matches minutes as cron does, in UTC", () => {
    const hourly = parseCron("17 * * * *");
    expect(hourly.matches(at("2026-11-28T21:17:00Z"))).toBe(true);
    expect(hourly.matches(at("2026-11-28T21:18:00Z"))).toBe(false);
    expect(parseCron("* * * * *").matches(at("2026-11-28T03:59:00Z"))).toBe(true);
    const steps = parseCron("*/15 9-17 * * 1-5");
    expect(steps.matches(at("2026-11-30T09:45:00Z"))).toBe(true); // a Monday
    expect(steps.matches(at("2026-11-29T09:45:00Z"))).toBe(false); // a Sunday
    expect(steps.matches(at("2026-11-30T18:00:00Z"))).toBe(false);
    // Day of month and day of week both restricted: either matches.
    const either = parseCron("0 0 1 * 0");
    expect(either.matches(at("2026-12-01T00:00:00Z"))).toBe(true);
    expect(either.matches(at("2026-11-29T00:00:00Z"))).toBe(true);
    expect(either.matches(at("2026-11-30T00:00:00Z"))).toBe(false);
  });

  it("refuses what it does not understand rather than never firing", () => {
    expect(() => parseCron("* * * *")).toThrow(/five fields/);
    expect(() => parseCron("61 * * * *")).toThrow(/not understood/);
    expect(() => parseCron("0 0 * * MON")).toThrow(/not understood/);
  });
});
