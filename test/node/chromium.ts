/// <reference types="node" />
/**
 * A real headless Chromium for the browser tests, driven by playwright-core. The browser is
 * Debian's (`/usr/bin/chromium`), or the one CHROMIUM_PATH names; when neither exists,
 * scripts/install-chromium.sh installs it (as root, from Debian's archive), so `npm ci && npm test`
 * works on a fresh machine.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Browser, chromium } from "playwright-core";

const ROOT = resolve(import.meta.dirname, "../..");

/** The flags this machine's closed network and root user need (platform.md, "Browsers for tests"). */
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-default-apps",
  "--disable-extensions",
  "--metrics-recording-only",
];

function chromiumPath(): string | undefined {
  for (const candidate of [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"]) {
    if (candidate && existsSync(candidate)) return candidate;
  }
  return undefined;
}

export function ensureChromium(): string {
  const found = chromiumPath();
  if (found) return found;
  execFileSync("sh", [join(ROOT, "scripts", "install-chromium.sh")], { stdio: "inherit", timeout: 600_000 });
  const installed = chromiumPath();
  if (!installed) throw new Error("Chromium is still missing after scripts/install-chromium.sh");
  return installed;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: ensureChromium(), headless: true, args: FLAGS });
}
