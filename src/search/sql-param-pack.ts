/**
 * Every value of a search statement travels in ONE bound parameter: a JSON array that the SQL
 * reads back with `?1 ->> n` (a scalar) or `json_each(?1 -> n)` (a list). A statement therefore
 * binds exactly one parameter whatever the request (D1 refuses more than 100), lists of
 * thousands of ids included, and a value used in several places of a statement is bound once.
 *
 * SQLite treats `?1 ->> n` as a constant: it is computed once per statement, and a comparison
 * with it can use an index exactly as `col = ?` can (docs/search.md shows the plans).
 */
import { type SQL, sql } from "drizzle-orm";

export class SqlParamPack {
  private readonly values: unknown[] = [];
  private readonly positions = new Map<string, number>();

  private position(value: unknown): number {
    const key = JSON.stringify(value);
    let position = this.positions.get(key);
    if (position === undefined) {
      position = this.values.length;
      this.values.push(value);
      this.positions.set(key, position);
    }
    return position;
  }

  /** A scalar value (string or finite number) as an SQL expression. */
  value(value: string | number): SQL {
    if (typeof value === "number" && !Number.isFinite(value)) throw new Error("non-finite number in a search parameter");
    // The position is an integer chosen here: the only text spliced into the statement.
    return sql.raw(`(?1 ->> ${this.position(value)})`);
  }

  /** A list of strings (or row keys) as the JSON text of an array, for `json_each(...)`. */
  list(values: readonly (string | number)[]): SQL {
    return sql.raw(`(?1 -> ${this.position([...values])})`);
  }

  /** The one bound parameter. */
  toParameter(): string {
    return JSON.stringify(this.values);
  }
}
