/**
 * The built-in price table: USD per 1M tokens (input, output), standard (non-batch, non-cached,
 * shortest-context) list prices.
 *
 * Source: the vendors' public pricing pages (openai.com/api/pricing,
 * anthropic.com/pricing#api, ai.google.dev/gemini-api/docs/pricing, mistral.ai/pricing) and, for
 * Meta's Llama models, which Meta does not sell by the token itself, Together AI's serverless
 * list prices (together.ai/pricing), as they stood on 2025-10-01, the date of this table. No
 * network was available to re-check them when the table was written: an organization that pays
 * other prices sets overrides (`PUT /v2/models/{model_name}/price_overrides`), which win over
 * this table. docs/analytics.md says how names match (exact name, then family).
 */
export const BUILT_IN_PRICES_DATE = "2025-10-01";

export interface ModelPrice {
  /** USD per 1M input tokens. */
  input_price: number;
  /** USD per 1M output tokens. */
  output_price: number;
}

const table: [name: string, input: number, output: number][] = [
  // OpenAI
  ["gpt-5", 1.25, 10],
  ["gpt-5-mini", 0.25, 2],
  ["gpt-5-nano", 0.05, 0.4],
  ["gpt-4.1", 2, 8],
  ["gpt-4.1-mini", 0.4, 1.6],
  ["gpt-4.1-nano", 0.1, 0.4],
  ["gpt-4o", 2.5, 10],
  ["gpt-4o-mini", 0.15, 0.6],
  ["gpt-4-turbo", 10, 30],
  ["gpt-4", 30, 60],
  ["gpt-3.5-turbo", 0.5, 1.5],
  ["o1", 15, 60],
  ["o1-mini", 1.1, 4.4],
  ["o3", 2, 8],
  ["o3-mini", 1.1, 4.4],
  ["o4-mini", 1.1, 4.4],
  // Anthropic
  ["claude-opus-4-1", 15, 75],
  ["claude-opus-4", 15, 75],
  ["claude-sonnet-4-5", 3, 15],
  ["claude-sonnet-4", 3, 15],
  ["claude-haiku-4-5", 1, 5],
  ["claude-3-7-sonnet", 3, 15],
  ["claude-3-5-sonnet", 3, 15],
  ["claude-3-5-haiku", 0.8, 4],
  ["claude-3-opus", 15, 75],
  ["claude-3-haiku", 0.25, 1.25],
  // Google
  ["gemini-2.5-pro", 1.25, 10],
  ["gemini-2.5-flash", 0.3, 2.5],
  ["gemini-2.5-flash-lite", 0.1, 0.4],
  ["gemini-2.0-flash", 0.1, 0.4],
  ["gemini-2.0-flash-lite", 0.075, 0.3],
  ["gemini-1.5-pro", 1.25, 5],
  ["gemini-1.5-flash", 0.075, 0.3],
  // Mistral
  ["mistral-large", 2, 6],
  ["mistral-medium", 0.4, 2],
  ["mistral-small", 0.1, 0.3],
  ["codestral", 0.3, 0.9],
  ["pixtral-large", 2, 6],
  ["ministral-8b", 0.1, 0.1],
  ["ministral-3b", 0.04, 0.04],
  ["open-mistral-nemo", 0.15, 0.15],
  // Meta (Together AI)
  ["llama-4-maverick", 0.27, 0.85],
  ["llama-4-scout", 0.18, 0.59],
  ["llama-3.3-70b", 0.88, 0.88],
  ["llama-3.1-405b", 3.5, 3.5],
  ["llama-3.1-70b", 0.88, 0.88],
  ["llama-3.1-8b", 0.18, 0.18],
];

/** A Map, so that a client's model name such as `constructor` finds nothing. */
export const BUILT_IN_PRICES: ReadonlyMap<string, ModelPrice> = new Map(
  table.map(([name, input_price, output_price]) => [name, { input_price, output_price }]),
);
