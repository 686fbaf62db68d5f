/**
 * An organization's price overrides (catalog table `model_price_overrides`), and the price book
 * ingestion computes costs with.
 *
 * Ingestion must not pay a catalog read per request, so each isolate keeps an organization's
 * overrides for OVERRIDES_TTL_MS; an override set or removed reaches every isolate within that
 * time (the contract allows 5 minutes), and the isolate that changed it at once.
 */
import type { ModelPrice } from "./built-in-prices";
import { type PriceBook, type PriceOverrides, priceOf } from "./price-lookup";

export const OVERRIDES_TTL_MS = 60_000;

/** Model names compare without case; they are stored lower-cased. */
export const modelKey = (name: string) => name.trim().toLowerCase();

const cache = new Map<string, { loadedAt: number; overrides: PriceOverrides }>();

interface OverrideRow {
  name: string;
  input_price: number;
  output_price: number;
}

export async function listOverrides(db: D1Database, organizationId: string): Promise<OverrideRow[]> {
  const rows = await db
    .prepare("SELECT name, input_price, output_price FROM model_price_overrides WHERE organization_id = ?1 ORDER BY name")
    .bind(organizationId)
    .all<OverrideRow>();
  return rows.results;
}

async function overridesOf(db: D1Database, organizationId: string): Promise<PriceOverrides> {
  const cached = cache.get(organizationId);
  if (cached && Date.now() - cached.loadedAt < OVERRIDES_TTL_MS) return cached.overrides;
  const rows = await listOverrides(db, organizationId);
  const overrides: PriceOverrides = new Map(rows.map((r) => [r.name, { input_price: r.input_price, output_price: r.output_price }]));
  cache.set(organizationId, { loadedAt: Date.now(), overrides });
  return overrides;
}

/**
 * The prices an organization's records are costed with (catalog database `db`), for one request:
 * each model's price is looked up once (a lookup tries every prefix of the name against two
 * tables), however many of the request's spans name it.
 */
export async function priceBookFor(db: D1Database, organizationId: string): Promise<PriceBook> {
  const overrides = await overridesOf(db, organizationId);
  const known = new Map<string, ModelPrice | null>();
  return (model) => {
    let price = known.get(model);
    if (price === undefined) {
      price = priceOf(model, overrides);
      known.set(model, price);
    }
    return price;
  };
}

/** The organization's override of exactly `name`, if any. */
export async function overrideOf(db: D1Database, organizationId: string, name: string): Promise<ModelPrice | null> {
  return db
    .prepare("SELECT input_price, output_price FROM model_price_overrides WHERE organization_id = ?1 AND name = ?2")
    .bind(organizationId, modelKey(name))
    .first<ModelPrice>();
}

export async function setOverride(db: D1Database, organizationId: string, name: string, price: ModelPrice, now: number): Promise<void> {
  await db
    .prepare(
      `INSERT INTO model_price_overrides (organization_id, name, input_price, output_price, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
       ON CONFLICT (organization_id, name) DO UPDATE SET input_price = excluded.input_price, output_price = excluded.output_price, updated_at = excluded.updated_at`,
    )
    .bind(organizationId, modelKey(name), price.input_price, price.output_price, now)
    .run();
  cache.delete(organizationId);
}

/** Removes the override; false when there was none. */
export async function removeOverride(db: D1Database, organizationId: string, name: string): Promise<boolean> {
  const result = await db.prepare("DELETE FROM model_price_overrides WHERE organization_id = ?1 AND name = ?2").bind(organizationId, modelKey(name)).run();
  cache.delete(organizationId);
  return result.meta.changes > 0;
}
