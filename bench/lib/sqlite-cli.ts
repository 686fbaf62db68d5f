/**
 * The SQLite file, straight: everything the bench does to a database file without the Workers
 * runtime goes through the `sqlite3` command-line shell (installed by bench/setup.sh; it is not an
 * npm dependency, and Node 20 has no built-in SQLite).
 *
 * Parameters are bound, not spliced into the SQL: the shell binds `?NNN` (and anonymous `?`, by
 * position) from its `temp.sqlite_parameters` table, which we fill with typed literals before each
 * statement. So the engine runs exactly the statement text and parameter types the worker sent to
 * D1, and its query plan is the one D1 gets.
 */
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { BENCH_DIR } from "./paths";

export type SqlValue = string | number | boolean | null;

export interface SqlStatement {
  sql: string;
  params: SqlValue[];
}

/** Installs the sqlite3 shell from apt when it is missing (bench/setup.sh). */
export function ensureSqlite3(): void {
  if (spawnSync("sqlite3", ["-version"], { stdio: "ignore" }).status === 0) return;
  console.log("sqlite3 not found: running bench/setup.sh");
  const setup = spawnSync("bash", [path.join(BENCH_DIR, "setup.sh")], { stdio: "inherit" });
  if (setup.status !== 0) throw new Error("bench/setup.sh failed: install the sqlite3 shell (apt-get install -y sqlite3) and rerun");
}

/** An SQL literal of a value, typed as D1 would bind it (booleans as 1/0). */
export function sqlLiteral(value: SqlValue | undefined): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "boolean") return value ? "1" : "0";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error(`cannot bind ${value}`);
    // String() gives the shortest exact form: integers read back as INTEGER, others as REAL.
    return String(value);
  }
  return `'${value.replace(/'/g, "''")}'`;
}

function terminated(sql: string): string {
  const trimmed = sql.trim();
  return trimmed.endsWith(";") ? trimmed : `${trimmed};`;
}

/** Shell input that sets the parameters of the next statement (the table needs `.parameter init`). */
export function bindParameters(params: readonly SqlValue[]): string {
  if (params.length === 0) return "DELETE FROM temp.sqlite_parameters;\n";
  const rows = params.map((value, i) => `('?${i + 1}', ${sqlLiteral(value)})`).join(",");
  return `DELETE FROM temp.sqlite_parameters;\nINSERT INTO temp.sqlite_parameters (key, value) VALUES ${rows};\n`;
}

/** Shell input that runs a statement with its parameters bound. */
export function boundStatement(statement: SqlStatement): string {
  return `${bindParameters(statement.params)}${terminated(statement.sql)}\n`;
}

export interface ShellResult {
  stdout: string;
  stderr: string;
}

/** Runs a shell script against a database file; any SQL error fails the whole run (-bail). */
export function runSqlite(file: string, script: string, options: { timeoutMs?: number } = {}): Promise<ShellResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("sqlite3", ["-bail", "-batch", file], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = options.timeoutMs ? setTimeout(() => child.kill("SIGKILL"), options.timeoutMs) : undefined;
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (timer) clearTimeout(timer);
      if (code === 0) resolve({ stdout, stderr });
      else reject(new Error(`sqlite3 ${path.basename(file)} failed (${signal ?? code}): ${stderr.trim().slice(0, 2000)}`));
    });
    child.stdin.on("error", () => undefined); // reported by 'close'
    child.stdin.end(script);
  });
}

/** One query's rows as JSON objects (the shell's -json mode). */
export async function queryJson<T = Record<string, unknown>>(file: string, statement: SqlStatement): Promise<T[]> {
  // A busy timeout: the file may be written by the service beside (wrangler dev) at that moment.
  const { stdout } = await runSqlite(file, `.timeout 10000\n.parameter init\n.mode json\n${boundStatement(statement)}`);
  const text = stdout.trim();
  return text === "" ? [] : (JSON.parse(text) as T[]);
}

/** How far a bulk load's producer may run ahead of the shell (input waiting in memory). */
const MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

/**
 * A long-running shell fed statement by statement, for bulk loads: input is written with
 * backpressure, so a generator producing gigabytes of SQL never holds more than
 * MAX_BUFFERED_BYTES of it.
 */
export class SqliteWriter {
  private readonly child;
  private stderr = "";
  private readonly done: Promise<void>;

  constructor(file: string) {
    this.child = spawn("sqlite3", ["-bail", "-batch", file], { stdio: ["pipe", "ignore", "pipe"] });
    this.child.stderr.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk));
    this.child.stdin.on("error", () => undefined);
    this.done = new Promise((resolve, reject) => {
      this.child.on("error", reject);
      this.child.on("close", (code, signal) => {
        if (code === 0) resolve();
        else reject(new Error(`sqlite3 load failed (${signal ?? code}): ${this.stderr.trim().slice(0, 2000)}`));
      });
    });
    // Surface a failure while the writer is still writing, not only at close().
    this.done.catch(() => undefined);
  }

  /**
   * Queues input for the shell. The caller may run ahead of the shell by up to
   * MAX_BUFFERED_BYTES, so that producing the next statements (CPU in Node) and running the
   * previous ones (CPU in sqlite3) overlap on two cores instead of taking turns.
   */
  async write(text: string): Promise<void> {
    if (this.child.exitCode !== null) await this.done;
    const stdin = this.child.stdin;
    if (stdin.write(text) || stdin.writableLength < MAX_BUFFERED_BYTES) return;
    await new Promise<void>((resolve, reject) => {
      const onDrain = () => {
        this.child.off("close", onClose);
        resolve();
      };
      const onClose = () => {
        stdin.off("drain", onDrain);
        this.done.then(() => reject(new Error("sqlite3 exited during the load")), reject);
      };
      stdin.once("drain", onDrain);
      this.child.once("close", onClose);
    });
  }

  async close(): Promise<void> {
    this.child.stdin.end();
    await this.done;
  }
}

export interface StatementTimings {
  /** Per repetition, milliseconds for all the statements together. */
  samples: number[];
}

const RUN_TIME = /^Run Time: real ([\d.]+) user ([\d.]+) sys ([\d.]+)$/gm;

/**
 * Times statements run back to back on the file (the engine figure). Each repetition runs every
 * statement of `statements` (one D1 call's worth) and its time is their sum.
 *
 * A statement's time is the CPU time the shell reports for it (user + sys, from getrusage, 1 µs
 * resolution), not its wall clock, which sqlite3 3.40 reports in whole milliseconds: too coarse
 * for statements that take a fraction of one. Once the warm-up has brought the pages into
 * memory a statement never waits, so the two agree (to the millisecond on long statements);
 * and on a shared machine CPU time is not inflated by other processes taking the core.
 */
export async function timeStatements(
  file: string,
  statements: readonly SqlStatement[],
  options: { warmup: number; repetitions: number; timeoutMs?: number },
): Promise<StatementTimings> {
  const parts = [".parameter init", ".output /dev/null", ".timer off"];
  const total = options.warmup + options.repetitions;
  for (let i = 0; i < total; i += 1) {
    for (const statement of statements) {
      parts.push(".timer off", bindParameters(statement.params).trimEnd(), ".timer on", terminated(statement.sql), ".timer off");
    }
  }
  const { stdout } = await runSqlite(file, `${parts.join("\n")}\n`, { timeoutMs: options.timeoutMs });
  const times = [...stdout.matchAll(RUN_TIME)].map(([, , user, sys]) => (Number(user) + Number(sys)) * 1000);
  if (times.length !== total * statements.length) {
    throw new Error(`expected ${total * statements.length} timings from sqlite3, got ${times.length}`);
  }
  const samples: number[] = [];
  for (let i = options.warmup; i < total; i += 1) {
    let sum = 0;
    for (let j = 0; j < statements.length; j += 1) sum += times[i * statements.length + j]!;
    samples.push(sum);
  }
  return { samples };
}

/** The query plan SQLite chooses for a statement (EXPLAIN QUERY PLAN), one line per step. */
export async function queryPlan(file: string, statement: SqlStatement): Promise<string> {
  const { stdout } = await runSqlite(file, `.parameter init\n${bindParameters(statement.params)}EXPLAIN QUERY PLAN ${terminated(statement.sql)}\n`);
  return stdout.trim();
}
