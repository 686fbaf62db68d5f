import { type RelationalSchemaConfig, type TablesRelationalConfig, createTableRelationsHelpers, extractTablesRelationalConfig } from "drizzle-orm";
import { DrizzleD1Database } from "drizzle-orm/d1";
import { SQLiteD1Session } from "drizzle-orm/d1/session";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import * as schema from "./schema";

export type Database = DrizzleD1Database<typeof schema>;

/**
 * What `drizzle(d1, { schema })` derives from the schema (`extractTablesRelationalConfig` walks
 * every table and relation: 4-5 ms of a request's CPU in workerd, paid on every call, and a
 * request makes several), built once per isolate: it depends on the schema alone. The dialect
 * holds no per-request state either.
 */
let relational: RelationalSchemaConfig<TablesRelationalConfig> | undefined;
let dialect: SQLiteAsyncDialect | undefined;

/**
 * The drizzle database of a binding, once per binding object and isolate. The same object is
 * asked for several times in a request (authentication, then the route), and a binding the
 * isolate keeps (env.DB when no middleware wraps it) across requests; each wrapper a request
 * makes (the round-trip counter, a D1 session) gets its own, dropped with it. Built as
 * `drizzle()` builds it (drizzle-orm/d1/driver.js), minus the per-call schema walk.
 */
const databases = new WeakMap<D1Database, Database>();

export function database(d1: D1Database): Database {
  const known = databases.get(d1);
  if (known) return known;
  if (!relational) {
    const tables = extractTablesRelationalConfig(schema, createTableRelationsHelpers);
    relational = { fullSchema: schema, schema: tables.tables, tableNamesMap: tables.tableNamesMap };
  }
  dialect ??= new SQLiteAsyncDialect();
  const session = new SQLiteD1Session(d1, dialect, relational, {});
  const db = new DrizzleD1Database("async", dialect, session, relational) as Database;
  Object.assign(db, { $client: d1 });
  databases.set(d1, db);
  return db;
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
