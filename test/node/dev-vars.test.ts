/// <reference types="node" />
/**
 * `.dev.vars` as `npm start` makes it (scripts/lib/dev-vars.ts) when several starts run at once, as
 * the node tests start them side by side: a file that another start created between this one's
 * check and its write is kept as it is, and this start goes on with it instead of failing.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { ensureDevVars } from "../../scripts/lib/dev-vars";

const dir = mkdtempSync(join(tmpdir(), "trace-store-dev-vars-"));
const devVars = join(dir, ".dev.vars");
const example = join(dir, ".dev.vars.example");
const OTHER_START = "TOKEN_SECRET=written-by-the-other-start\n";

/** The .dev.vars that another start writes right after this one looked for it (and found nothing). */
const race = vi.hoisted(() => ({ path: "" }));
vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  return {
    ...fs,
    existsSync(path: import("node:fs").PathLike) {
      const found = fs.existsSync(path);
      if (!found && String(path) === race.path) fs.writeFileSync(path, OTHER_START);
      return found;
    },
  };
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("ensureDevVars", () => {
  it("creates .dev.vars from the example with a random secret when it is missing", () => {
    const fresh = join(dir, "fresh.dev.vars");
    writeFileSync(example, "TOKEN_SECRET=change-me\n");
    expect(ensureDevVars(fresh, example)).toBe(true);
    expect(readFileSync(fresh, "utf8")).toMatch(/^TOKEN_SECRET=[\w-]{43}\n$/);
    expect(ensureDevVars(fresh, example)).toBe(false);
  });

  it("keeps a .dev.vars another start created meanwhile, and does not fail", () => {
    race.path = devVars;
    expect(ensureDevVars(devVars, example)).toBe(false);
    expect(readFileSync(devVars, "utf8")).toBe(OTHER_START);
  });
});
