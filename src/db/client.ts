import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

export type Database = ReturnType<typeof database>;

export function database(d1: D1Database) {
  return drizzle(d1, { schema });
}

/** Microseconds since the epoch: the unit of every stored timestamp. */
export function nowMicros(): number {
  return Date.now() * 1000;
}

export function microsToIso(micros: number): string {
  const millis = Math.floor(micros / 1000);
  const iso = new Date(millis).toISOString(); // 2026-11-22T05:20:49.123Z
  const subMillis = String(Math.trunc(micros - millis * 1000)).padStart(3, "0");
  return `${iso.slice(0, 23)}${subMillis}Z`;
}
