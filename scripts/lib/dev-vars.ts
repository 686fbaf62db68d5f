/// <reference types="node" />
/**
 * `.dev.vars` holds the worker's secrets for `wrangler dev`. On a fresh clone it is made from
 * `.dev.vars.example` with a random TOKEN_SECRET, so no two checkouts share a signing secret and
 * nobody has to invent one before the first `npm start`.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./wrangler";

export const DEV_VARS = join(REPO_ROOT, ".dev.vars");
export const DEV_VARS_EXAMPLE = join(REPO_ROOT, ".dev.vars.example");

/** The example's text with TOKEN_SECRET set to `secret` (the line is added if the example lacks it). */
export function devVarsFromExample(example: string, secret: string): string {
  const line = `TOKEN_SECRET=${secret}`;
  if (/^TOKEN_SECRET=.*$/m.test(example)) return example.replace(/^TOKEN_SECRET=.*$/m, line);
  return `${example.replace(/\n?$/, "\n")}${line}\n`;
}

/**
 * Creates .dev.vars if it is missing; returns whether it did. An existing file is never touched,
 * one created meanwhile by another `npm start` (the node tests start several at once) included.
 */
export function ensureDevVars(path = DEV_VARS, examplePath = DEV_VARS_EXAMPLE): boolean {
  if (existsSync(path)) return false;
  const example = existsSync(examplePath) ? readFileSync(examplePath, "utf8") : "";
  try {
    writeFileSync(path, devVarsFromExample(example, randomBytes(32).toString("base64url")), { mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  return true;
}
