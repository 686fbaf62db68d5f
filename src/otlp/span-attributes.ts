/**
 * A span's attributes as the mapping reads them: every attribute the mapping turns into a column
 * is marked as taken, and the rest (`remaining()`) goes to `user_metadata`, so a value is stored
 * once, in the column that shows it best, and no attribute is lost.
 */
import type { Plain } from "./attribute-values";

export class SpanAttributes {
  private readonly taken = new Set<string>();

  constructor(readonly map: Map<string, Plain>) {}

  /** The value of `key` (marked as taken when present). */
  take(key: string): Plain | undefined {
    if (!this.map.has(key)) return undefined;
    this.taken.add(key);
    return this.map.get(key);
  }

  /** The first of `keys` present (every one present is taken: the others repeat it). */
  first(...keys: string[]): Plain | undefined {
    let found: Plain | undefined;
    for (const key of keys) {
      const value = this.take(key);
      if (found === undefined && value !== undefined && value !== null && value !== "") found = value;
    }
    return found;
  }

  /**
   * Attributes flattened by index under `prefix` (`gen_ai.prompt.0.role`, `gen_ai.prompt.0.content`,
   * ...) as a list of maps keyed by what follows the index (`role`, `content`), in index order.
   * Every key under the prefix is taken.
   */
  indexed(prefix: string): Map<string, Plain>[] {
    const groups = new Map<number, Map<string, Plain>>();
    for (const [key, value] of this.map) {
      if (!key.startsWith(prefix)) continue;
      this.taken.add(key);
      const rest = key.slice(prefix.length);
      const dot = rest.indexOf(".");
      const index = Number(dot < 0 ? rest : rest.slice(0, dot));
      if (dot < 0 || !Number.isInteger(index) || index < 0) continue;
      let group = groups.get(index);
      if (!group) groups.set(index, (group = new Map()));
      group.set(rest.slice(dot + 1), value);
    }
    return [...groups.entries()].sort(([a], [b]) => a - b).map(([, group]) => group);
  }

  /** Attributes under `prefix` with the prefix removed (`metadata.customer` -> `customer`); taken. */
  withPrefix(prefix: string): [string, Plain][] {
    const found: [string, Plain][] = [];
    for (const [key, value] of this.map) {
      if (!key.startsWith(prefix) || key.length === prefix.length) continue;
      this.taken.add(key);
      found.push([key.slice(prefix.length), value]);
    }
    return found;
  }

  /** The attributes nothing took, in the order they came. */
  remaining(): [string, Plain][] {
    return [...this.map].filter(([key]) => !this.taken.has(key));
  }
}

/** The sub-attributes of an indexed group under `prefix` (`tool_calls.0.name` -> group of `tool_calls.` -> [{name}]). */
export function subGroups(group: Map<string, Plain>, prefix: string): Map<string, Plain>[] {
  const inner = new SpanAttributes(group);
  return inner.indexed(prefix);
}
