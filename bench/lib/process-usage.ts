/**
 * What a process costs, read from outside through /proc (Linux): its CPU time, its resident
 * memory now and at its peak, and a reset of that peak so that one measurement's peak is its own.
 * The bench uses it on the `workerd` process that `wrangler dev` starts: the process that runs
 * the worker's isolate (and, locally, its D1 databases).
 */
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";

/** Clock ticks per second of /proc/<pid>/stat's CPU fields (`getconf CLK_TCK`, 100 on Linux). */
const CLOCK_TICKS = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

interface ProcStat {
  pid: number;
  comm: string;
  processGroup: number;
  /** user + system CPU, seconds. */
  cpuSeconds: number;
}

/** /proc/<pid>/stat; `comm` is in parentheses and may itself hold spaces or parentheses. */
function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  const fields = text.slice(close + 2).split(" ");
  // After comm: state(3) ppid(4) pgrp(5) ... utime(14) stime(15): fields[0] is field 3.
  return { pid, comm: text.slice(open + 1, close), processGroup: Number(fields[2]), cpuSeconds: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS };
}

/** The `workerd` processes of a process group (`wrangler dev` runs in a group of its own). */
export function workerdPidsOf(processGroup: number): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = procStat(Number(name));
    if (stat && stat.processGroup === processGroup && stat.comm === "workerd") pids.push(stat.pid);
  }
  return pids;
}

export function cpuSeconds(pid: number): number {
  const stat = procStat(pid);
  if (!stat) throw new Error(`process ${pid} is gone`);
  return stat.cpuSeconds;
}

export interface Memory {
  /** Resident set now, bytes (VmRSS). */
  rss: number;
  /** Its anonymous part (RssAnon): heaps, the isolate's included; not mapped files. */
  anonymous: number;
  /** Its file-backed part (RssFile): code and mapped files. */
  file: number;
  /** The resident set's peak since the process started or since `resetPeakMemory` (VmHWM). */
  peak: number;
}

export function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
    if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
    return Number(match[1]) * 1024;
  };
  return { rss: kb("VmRSS"), anonymous: kb("RssAnon"), file: kb("RssFile"), peak: kb("VmHWM") };
}

/**
 * Sets VmHWM back to the current resident set (writing 5 to /proc/<pid>/clear_refs, Linux 4.0+;
 * allowed on one's own processes), so that the peak read afterwards is the peak of what ran since.
 */
export function resetPeakMemory(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}
