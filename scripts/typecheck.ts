// `npm run typecheck`: one process checks the four TypeScript projects (the worker and its tests
// at the root, scripts/, bench/, ui/), each under its own tsconfig.json, in about half the CPU of
// four `tsc --noEmit -p` runs (issue 36: measured in docs/benchmarks.md).
//
// Why not four tsc runs: scripts/ and bench/ import much of src/, and each tsc run re-parsed and
// fully re-checked those src files (bench alone: 348 files, 31 CPU s). Here each project reports
// the diagnostics of ITS OWN files only (src/ and test/ belong to the root project, checked once,
// under the root's options, as before); a file of another folder that a project imports is still
// type-checked as far as the importing code uses it, since the checker resolves what it needs
// lazily. Parsed files are shared between the programs (one parse of src/ and of the libs).
// Why not `tsc -b` with project references: it needs declaration emit of src/, whose inferred
// Hono/zod route types are huge, and it still builds each project as a whole.
import { fork } from "node:child_process";
import { relative, resolve, sep } from "node:path";
import { performance } from "node:perf_hooks";
import ts from "typescript";

const root = resolve(import.meta.dirname, "..");

/** A project, and which of its files it reports on (the others belong to another project). */
const projects: { dir: string; owns: (file: string) => boolean }[] = [
  { dir: ".", owns: () => true },
  { dir: "scripts", owns: (file) => file.startsWith(resolve(root, "scripts") + sep) },
  { dir: "bench", owns: (file) => file.startsWith(resolve(root, "bench") + sep) },
  { dir: "ui", owns: () => true },
];

/** Parsed source files shared by the programs, keyed by what changes a parse. */
const parsed = new Map<string, ts.SourceFile>();

function check(dir: string, owns: (file: string) => boolean): ts.Diagnostic[] {
  const configPath = resolve(root, dir, "tsconfig.json");
  const config = ts.getParsedCommandLineOfConfigFile(configPath, {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  });
  if (!config) throw new Error(`cannot read ${configPath}`);
  const host = ts.createCompilerHost(config.options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersionOrOptions, onError, shouldCreate) => {
    const opts =
      typeof languageVersionOrOptions === "object"
        ? languageVersionOrOptions
        : { languageVersion: languageVersionOrOptions };
    const key = `${fileName}\0${opts.languageVersion}\0${opts.impliedNodeFormat ?? ""}`;
    let file = parsed.get(key);
    if (!file || shouldCreate) {
      file = read(fileName, languageVersionOrOptions, onError, shouldCreate);
      if (file) parsed.set(key, file);
    }
    return file;
  };
  const program = ts.createProgram({
    rootNames: config.fileNames,
    options: config.options,
    projectReferences: config.projectReferences,
    host,
    configFileParsingDiagnostics: config.errors,
  });
  const diagnostics: ts.Diagnostic[] = [
    ...config.errors,
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
  ];
  for (const file of program.getSourceFiles()) {
    if (file.isDeclarationFile && program.isSourceFileFromExternalLibrary(file)) continue;
    if (file.fileName.includes("/node_modules/")) continue;
    if (!owns(resolve(file.fileName))) continue;
    diagnostics.push(...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file));
  }
  return diagnostics;
}

/** Checks the named projects in this process; returns the number of diagnostics printed. */
function checkAll(dirs: string[]): number {
  let failed = 0;
  for (const { dir, owns } of projects.filter((p) => dirs.includes(p.dir))) {
    const started = performance.now();
    const diagnostics = check(dir, owns);
    if (diagnostics.length > 0) {
      failed += diagnostics.length;
      process.stdout.write(
        ts.formatDiagnosticsWithColorAndContext(diagnostics, {
          getCanonicalFileName: (f) => f,
          getCurrentDirectory: () => root,
          getNewLine: () => "\n",
        }),
      );
    }
    if (process.env.TYPECHECK_TIMES) {
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      process.stderr.write(`typecheck ${relative(root, resolve(root, dir)) || "."}: ${seconds} s\n`);
    }
  }
  return failed;
}

// Two lanes, one per core: the root project (src/ and test/, the larger half) here, the three
// others in a child process, which shares their parse of src/ among them.
const only = process.argv.indexOf("--only");
if (only >= 0) {
  const dirs = (process.argv[only + 1] ?? "").split(",");
  const failed = checkAll(dirs);
  if (failed > 0) process.stdout.write(`\n${failed} type error${failed === 1 ? "" : "s"} in ${dirs.join(", ")}\n`);
  process.exit(failed > 0 ? 1 : 0);
}
const others = fork(import.meta.filename, ["--only", "scripts,bench,ui"], { stdio: "inherit" });
const othersDone = new Promise<number>((done) => others.on("exit", (code) => done(code ?? 1)));
const failed = checkAll(["."]);
const othersCode = await othersDone;
if (failed > 0) process.stdout.write(`\n${failed} type error${failed === 1 ? "" : "s"} in the root project\n`);
process.exit(failed > 0 || othersCode !== 0 ? 1 : 0);
