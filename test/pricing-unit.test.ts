/**
 * The price lookup (contract, section 9): exact names, families by longest prefix once a trailing
 * date is removed, overrides before the built-in table, and the cost of a call.
 */
import { describe, expect, it } from "vitest";
import { BUILT_IN_PRICES } from "../src/pricing/built-in-prices";
import { callCost, defaultPriceOf, priceOf, withoutTrailingDate } from "../src/pricing/price-lookup";

const price = (input_price: number, output_price: number) => ({ input_price, output_price });

describe("the built-in table", () => {
  it("covers current OpenAI, Anthropic, Google, Mistral and Meta models", () => {
    for (const name of ["gpt-4o", "gpt-4.1-mini", "claude-sonnet-4", "gemini-2.5-flash", "mistral-large", "llama-3.3-70b"]) {
      expect(BUILT_IN_PRICES.has(name), name).toBe(true);
    }
  });

  it("matches a dated name to its family, the longest prefix", () => {
    expect(defaultPriceOf("gpt-4o-mini-2024-07-18")).toEqual(BUILT_IN_PRICES.get("gpt-4o-mini"));
    expect(defaultPriceOf("gpt-4o-2024-08-06")).toEqual(BUILT_IN_PRICES.get("gpt-4o"));
    expect(defaultPriceOf("claude-3-5-sonnet-20241022")).toEqual(BUILT_IN_PRICES.get("claude-3-5-sonnet"));
    expect(defaultPriceOf("gpt-4-0613")).toEqual(BUILT_IN_PRICES.get("gpt-4"));
    expect(defaultPriceOf("gemini-2.5-flash-lite-preview")).toEqual(BUILT_IN_PRICES.get("gemini-2.5-flash-lite"));
  });

  it("ignores case and a provider path", () => {
    expect(defaultPriceOf("GPT-4o")).toEqual(BUILT_IN_PRICES.get("gpt-4o"));
    expect(defaultPriceOf("openai/gpt-4o-mini")).toEqual(BUILT_IN_PRICES.get("gpt-4o-mini"));
    expect(defaultPriceOf("meta-llama/Llama-3.3-70B-Instruct-Turbo")).toEqual(BUILT_IN_PRICES.get("llama-3.3-70b"));
  });

  it("knows nothing of other names, including those an object's prototype holds", () => {
    for (const name of ["my-finetune", "constructor", "__proto__", "toString", ""]) expect(defaultPriceOf(name), name).toBeNull();
  });

  it("removes only trailing dates", () => {
    expect(withoutTrailingDate("gpt-4o-2024-08-06")).toBe("gpt-4o");
    expect(withoutTrailingDate("claude-3-opus@20240229")).toBe("claude-3-opus");
    expect(withoutTrailingDate("gpt-4o")).toBe("gpt-4o");
    expect(withoutTrailingDate("llama-3.1-405b")).toBe("llama-3.1-405b");
  });
});

describe("overrides", () => {
  it("win in the contract's order: exact override, family override, exact built-in, family built-in", () => {
    const overrides = new Map([["gpt-4o", price(1, 2)], ["gpt-4o-mini-2024-07-18", price(3, 4)]]);
    expect(priceOf("gpt-4o-mini-2024-07-18", overrides)).toEqual(price(3, 4));
    // The override's family (gpt-4o) beats the built-in exact family entry gpt-4o-mini.
    expect(priceOf("gpt-4o-mini", overrides)).toEqual(price(1, 2));
    expect(priceOf("claude-3-haiku-20240307", overrides)).toEqual(BUILT_IN_PRICES.get("claude-3-haiku"));
  });
});

describe("the cost of a call", () => {
  it("is tokens times the price per million", () => {
    expect(callCost(price(2.5, 10), 1_000, 500)).toBeCloseTo(0.0025 + 0.005, 12);
    expect(callCost(price(0, 0), 1_000, 500)).toBe(0);
  });
});
