/**
 * Which price applies to a model name, and what a call cost (contract, section 9). Pure.
 *
 * Order: the organization's override for the exact name, its override for the family, the
 * built-in table's exact name, its family. A family is the longest prefix of the name that names
 * an entry of that table, once a trailing date is removed: `gpt-4o-mini-2024-07-18` is
 * `gpt-4o-mini`, not `gpt-4o`.
 *
 * Decisions where the contract is silent: names compare without case (`GPT-4o` is `gpt-4o`), and
 * a provider path before the last `/` is ignored when the whole name finds nothing
 * (`openai/gpt-4o`, `models/gemini-1.5-pro`, `meta-llama/Llama-3.3-70B-Instruct-Turbo`).
 */
import { BUILT_IN_PRICES, type ModelPrice } from "./built-in-prices";

/** Trailing dates as vendors write them: `-2024-08-06`, `-20241022`, `@20241022`, `-0613`, `-2407`. */
const TRAILING_DATE = /[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4})$/;

export function withoutTrailingDate(name: string): string {
  return name.replace(TRAILING_DATE, "");
}

/** The entry of `table` for `name`: exact, else its family (longest prefix of the undated name). */
export function tableEntry(table: ReadonlyMap<string, ModelPrice>, name: string): ModelPrice | null {
  const exact = table.get(name);
  if (exact) return exact;
  const undated = withoutTrailingDate(name);
  for (let end = undated.length; end > 0; end -= 1) {
    const entry = table.get(undated.slice(0, end));
    if (entry) return entry;
  }
  return null;
}

function candidates(model: string): string[] {
  const lower = model.trim().toLowerCase();
  const slash = lower.lastIndexOf("/");
  return slash >= 0 && slash < lower.length - 1 ? [lower, lower.slice(slash + 1)] : [lower];
}

/** Overrides keyed by lower-cased model name. */
export type PriceOverrides = ReadonlyMap<string, ModelPrice>;

/** The price of `model` for an organization with `overrides`, or null when nothing matches. */
export function priceOf(model: string, overrides: PriceOverrides): ModelPrice | null {
  for (const table of [overrides, BUILT_IN_PRICES]) {
    for (const name of candidates(model)) {
      const entry = tableEntry(table, name);
      if (entry) return entry;
    }
  }
  return null;
}

/** The built-in price alone (the `default` of `GET /v2/models/{model_name}/prices`). */
export function defaultPriceOf(model: string): ModelPrice | null {
  return priceOf(model, new Map());
}

/** USD for a call, prices being per 1M tokens. */
export function callCost(price: ModelPrice, inputTokens: number, outputTokens: number): number {
  return (inputTokens * price.input_price + outputTokens * price.output_price) / 1_000_000;
}

/** What ingestion needs: the price of a model for the writing organization. */
export type PriceBook = (model: string) => ModelPrice | null;
