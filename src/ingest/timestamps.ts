/**
 * ISO 8601 timestamps to the stored unit (microseconds since the epoch) without losing the
 * sub-millisecond digits that `Date` drops.
 */
const ISO = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:?\d{2})?$/i;

export function isoToMicros(value: string): number | undefined {
  const match = ISO.exec(value.trim());
  if (!match) {
    const millis = Date.parse(value);
    return Number.isFinite(millis) ? millis * 1000 : undefined;
  }
  const [, base, fraction = "", zone = "Z"] = match;
  const millis = Date.parse(`${base}.${fraction.padEnd(3, "0").slice(0, 3)}${zone.toUpperCase()}`);
  if (!Number.isFinite(millis)) return undefined;
  const subMillis = Number(fraction.padEnd(6, "0").slice(3, 6));
  return millis * 1000 + subMillis;
}
