/// <reference types="node" />
/**
 * Builds the trace explorer (ui/) into ui/dist, the directory wrangler.toml's `[assets]` serves:
 * - ui/src/main.tsx bundled and minified by esbuild (Preact, JSX) into assets/main-<hash>.js and
 *   .css, named by content hash so they can be cached for ever (`_headers`, which also gives
 *   every asset the explorer's Content-Security-Policy and other security headers);
 * - ui/index.html with those names filled in;
 * - the API reference bundle of `@scalar/api-reference` (the page at /docs loads it from here
 *   instead of a CDN; src/docs/api-reference-page.ts names the path).
 *
 * `npm test` (through vitest.config.ts), `npm start` and `npm run deploy` call it, so nobody has
 * to remember a build step. The output is built beside ui/dist, then copied in (new hashed files
 * first, index.html last, stale files removed after), so a running `wrangler dev`, which watches
 * the directory itself, keeps serving a consistent page throughout.
 */
import { build } from "esbuild";
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { gzipSync } from "node:zlib";
import { API_REFERENCE_BUNDLE_PATH } from "../../src/docs/api-reference-page";
import { EXPLORER_HEADERS } from "../../src/http/security-headers";
import { REPO_ROOT } from "./wrangler";

export const UI_ROOT = join(REPO_ROOT, "ui");
export const UI_DIST = join(UI_ROOT, "dist");
const SCALAR_BUNDLE = join(REPO_ROOT, "node_modules", "@scalar", "api-reference", "dist", "browser", "standalone.js");

/** The budget of the issue: all JavaScript of the explorer page, gzipped. */
export const JS_BUDGET_GZIP_BYTES = 150 * 1024;

export interface UiBuildReport {
  /** The page's JavaScript files (URL paths) with their raw and gzipped sizes. */
  scripts: { path: string; bytes: number; gzipBytes: number }[];
  totalGzipBytes: number;
  stylesheetGzipBytes: number;
}

/** Every file the build reads, newest first matters: a build older than any of them is stale. */
function inputFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.push(path);
    }
  };
  walk(join(UI_ROOT, "src"));
  files.push(join(UI_ROOT, "index.html"), join(REPO_ROOT, "scripts", "lib", "build-ui.ts"), join(REPO_ROOT, "package-lock.json"));
  return files;
}

/** Whether ui/dist holds a build newer than every input (then building again changes nothing). */
export function uiBuildIsFresh(): boolean {
  const marker = join(UI_DIST, "index.html");
  if (!existsSync(marker)) return false;
  const built = statSync(marker).mtimeMs;
  return inputFiles().every((file) => !existsSync(file) || statSync(file).mtimeMs <= built);
}

function gzipSize(bytes: Uint8Array): number {
  return gzipSync(bytes, { level: 9 }).length;
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

/** Copies the staged build into ui/dist in place: new files, then index.html, then stale files out. */
function publish(staging: string): void {
  const files = filesUnder(staging);
  for (const file of files.filter((f) => f !== "index.html")) {
    mkdirSync(dirname(join(UI_DIST, file)), { recursive: true });
    copyFileSync(join(staging, file), join(UI_DIST, file));
  }
  copyFileSync(join(staging, "index.html"), join(UI_DIST, "index.html"));
  const fresh = new Set(files);
  for (const file of filesUnder(UI_DIST)) if (!fresh.has(file)) rmSync(join(UI_DIST, file));
}

/**
 * `_headers` for the assets: every file and the page (the single-page fallback included) gets the
 * explorer's security headers (src/http/security-headers.ts); hashed names never change content,
 * so browsers may keep them for a year.
 */
function headersFile(): string {
  const security = Object.entries(EXPLORER_HEADERS).map(([name, value]) => `  ${name}: ${value}`);
  return ["/*", ...security, "/assets/*", "  Cache-Control: public, max-age=31536000, immutable", ""].join("\n");
}

export async function buildUi(): Promise<UiBuildReport> {
  const staging = join(UI_ROOT, `.dist-${process.pid}-${Date.now()}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(join(staging, "assets"), { recursive: true });
  try {
    const result = await build({
      entryPoints: [join(UI_ROOT, "src", "main.tsx")],
      outdir: join(staging, "assets"),
      entryNames: "[name]-[hash]",
      bundle: true,
      minify: true,
      format: "esm",
      target: ["es2022"],
      jsx: "automatic",
      jsxImportSource: "preact",
      legalComments: "eof",
      metafile: true,
      write: true,
      logLevel: "warning",
      absWorkingDir: REPO_ROOT,
    });
    const outputs = Object.keys(result.metafile.outputs).map((path) => join(REPO_ROOT, path));
    const script = outputs.find((path) => path.endsWith(".js"));
    const stylesheet = outputs.find((path) => path.endsWith(".css"));
    if (!script || !stylesheet) throw new Error("esbuild produced no script or no stylesheet");

    const template = readFileSync(join(UI_ROOT, "index.html"), "utf8");
    const html = template
      .replace("<!-- app:stylesheet -->", `<link rel="stylesheet" href="/assets/${basename(stylesheet)}" />`)
      .replace("<!-- app:script -->", `<script type="module" src="/assets/${basename(script)}"></script>`);
    if (html === template) throw new Error("ui/index.html lost its <!-- app:stylesheet --> / <!-- app:script --> markers");

    mkdirSync(join(staging, "vendor"), { recursive: true });
    copyFileSync(SCALAR_BUNDLE, join(staging, API_REFERENCE_BUNDLE_PATH));
    writeFileSync(join(staging, "_headers"), headersFile());
    // Written last: its time stamp is what uiBuildIsFresh compares.
    writeFileSync(join(staging, "index.html"), html);

    publish(staging);

    const scripts = outputs
      .filter((path) => path.endsWith(".js"))
      .map((path) => {
        const bytes = readFileSync(join(UI_DIST, relative(staging, path)));
        return { path: `/${relative(staging, path)}`, bytes: bytes.length, gzipBytes: gzipSize(bytes) };
      });
    return {
      scripts,
      totalGzipBytes: scripts.reduce((sum, s) => sum + s.gzipBytes, 0),
      stylesheetGzipBytes: gzipSize(readFileSync(join(UI_DIST, relative(staging, stylesheet)))),
    };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Builds unless ui/dist is already up to date (concurrent test processes then share one build). */
export async function ensureUiBuilt(): Promise<void> {
  if (!uiBuildIsFresh()) await buildUi();
}

export function describeBuild(report: UiBuildReport): string {
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  const lines = report.scripts.map((s) => `  ${s.path}  ${kb(s.bytes)}  (${kb(s.gzipBytes)} gzipped)`);
  lines.push(`  JavaScript total ${kb(report.totalGzipBytes)} gzipped (budget ${kb(JS_BUDGET_GZIP_BYTES)}); CSS ${kb(report.stylesheetGzipBytes)} gzipped`);
  return lines.join("\n");
}
