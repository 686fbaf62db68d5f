/**
 * Metric values the service derives rather than the client sends (contract, section 9): an llm
 * span's `cost` computed from its model's price, and a trace's or session's token and cost
 * roll-ups. They live in the record's `metrics` like any value (so they are searched, sorted and
 * returned as any metric), and `records.derived_metrics` says which are derived, one bit a key.
 *
 * The rule every write follows: a value the client sent always wins over a derived one (whatever
 * its age), a derived one never replaces the client's; between two values of the same kind the
 * ordinary merge applies (write-records.ts: the newer wins).
 */

/** The derivable metrics and their bits in `records.derived_metrics`. */
export const DERIVED_KEYS = [
  ["cost", 1],
  ["num_input_tokens", 2],
  ["num_output_tokens", 4],
  ["num_total_tokens", 8],
] as const;

export const DERIVED_COST_BIT = 1;

/**
 * The upsert's merge of `metrics` and `derived_metrics` (`excluded` the incoming row, `records`
 * the stored one), given the ordinary key-by-key merge `merged` and its age test `notOlder`.
 * When neither side has a derived value (nearly always) it is the ordinary merge.
 */
export function derivedAwareMerge(merged: string, notOlder: string): { metrics: string; derivedMetrics: string } {
  const has = (side: string, key: string) => `${side}.metrics ->> '$.${key}' IS NOT NULL`;
  const own = (side: string, bit: number) => `(${side}.derived_metrics & ${bit}) = 0`;
  const value = (side: string, key: string) => `${side}.metrics ->> '$.${key}'`;
  const both = (key: string) => `${has("excluded", key)} AND ${has("records", key)}`;
  const chosen = DERIVED_KEYS.map(
    ([key, bit]) => `'${key}', CASE WHEN ${both(key)} THEN
        CASE WHEN ${own("excluded", bit)} AND NOT ${own("records", bit)} THEN ${value("excluded", key)}
             WHEN ${own("records", bit)} AND NOT ${own("excluded", bit)} THEN ${value("records", key)}
             WHEN ${notOlder} THEN ${value("excluded", key)} ELSE ${value("records", key)} END
      ELSE coalesce(${value("excluded", key)}, ${value("records", key)}) END`,
  );
  const bits = DERIVED_KEYS.map(
    ([key, bit]) =>
      `CASE WHEN ${both(key)} THEN excluded.derived_metrics & records.derived_metrics & ${bit}
            WHEN ${has("excluded", key)} THEN excluded.derived_metrics & ${bit} ELSE records.derived_metrics & ${bit} END`,
  );
  const anyDerived = "(excluded.derived_metrics | records.derived_metrics) = 0";
  return {
    // json_object's null removes the key in json_patch: a key neither side has stays absent.
    metrics: `CASE WHEN ${anyDerived} THEN ${merged} ELSE json_patch(${merged}, json_object(${chosen.join(", ")})) END`,
    derivedMetrics: `CASE WHEN ${anyDerived} THEN 0 ELSE ${bits.map((b) => `(${b})`).join(" | ")} END`,
  };
}
