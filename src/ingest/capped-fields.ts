/**
 * zod schemas of the record fields that RECORD_LIMITS caps (record-limits.ts), counted in UTF-8
 * bytes. Each cap is a 422 in Pydantic's words, pointing at the key, tag or value over it.
 */
import { z } from "@hono/zod-openapi";
import { RECORD_LIMITS, utf8Bytes } from "./record-limits";

type Ctx = z.RefinementCtx;

function tooLong(ctx: Ctx, path: (string | number)[], input: unknown, what: string, maxBytes: number): void {
  const msg = `${what} should have at most ${maxBytes} bytes (UTF-8)`;
  ctx.addIssue({
    code: "custom",
    message: msg,
    path,
    input,
    params: { pydantic: { type: "string_too_long", msg, ctx: { max_length: maxBytes, unit: "bytes" } } },
  });
}

function tooMany(ctx: Ctx, count: number, what: string, max: number): void {
  const msg = `Value error, at most ${max} ${what} per record, got ${count}`;
  ctx.addIssue({
    code: "custom",
    message: msg,
    params: { pydantic: { type: "value_error", msg, ctx: { error: msg.replace("Value error, ", ""), max, actual: count } } },
  });
}

/** Checks a map's size and each key's bytes; `valueBytes` measures a value as it will be stored. */
function checkMap(
  map: Record<string, unknown>,
  ctx: Ctx,
  limits: { what: string; maxKeys: number; maxKeyBytes: number; maxValueBytes?: number },
  valueBytes: (value: unknown) => number,
): void {
  const keys = Object.keys(map);
  if (keys.length > limits.maxKeys) tooMany(ctx, keys.length, limits.what, limits.maxKeys);
  for (const key of keys) {
    if (utf8Bytes(key) > limits.maxKeyBytes) tooLong(ctx, [key], key, "Key", limits.maxKeyBytes);
    if (limits.maxValueBytes !== undefined && valueBytes(map[key]) > limits.maxValueBytes) {
      tooLong(ctx, [key], map[key], "Value", limits.maxValueBytes);
    }
  }
}

/**
 * `__proto__` is the one key a JSON object can carry that no JavaScript object built by
 * assignment keeps (the validator's own result drops it): it is refused by name rather than
 * silently lost. Every other key, `constructor` and `toString` included, is data.
 */
function refuseProtoKey(value: unknown, ctx: Ctx): unknown {
  if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.hasOwn(value, "__proto__")) {
    const msg = "Value error, the key __proto__ is not allowed";
    ctx.addIssue({ code: "custom", message: msg, path: ["__proto__"], input: "__proto__", params: { pydantic: { type: "value_error", msg, ctx: { error: "the key __proto__ is not allowed" } } } });
  }
  return value;
}

const MetadataValue = z.union([z.string(), z.number(), z.boolean()]).nullable();

/** `user_metadata`: string keys to strings (numbers and booleans are stored as their text). */
export const UserMetadata = z
  .preprocess(refuseProtoKey, z.record(z.string().min(1), MetadataValue))
  .superRefine((map, ctx) =>
    checkMap(
      map,
      ctx,
      {
        what: "user_metadata keys",
        maxKeys: RECORD_LIMITS.maxMetadataKeys,
        maxKeyBytes: RECORD_LIMITS.maxMetadataKeyBytes,
        maxValueBytes: RECORD_LIMITS.maxMetadataValueBytes,
      },
      (value) => (value === null ? 0 : utf8Bytes(String(value))),
    ),
  )
  .openapi({
    description: `String keys (1 to ${RECORD_LIMITS.maxMetadataKeyBytes} bytes) to strings of at most ${RECORD_LIMITS.maxMetadataValueBytes} bytes; at most ${RECORD_LIMITS.maxMetadataKeys} keys. Numbers and booleans are stored as their text; null values are dropped.`,
  });

/** `metrics`: metric names to numbers (null, NaN and infinities are dropped). */
export const Metrics = z
  .preprocess(refuseProtoKey, z.record(z.string().min(1), z.number().nullable()))
  .superRefine((map, ctx) =>
    checkMap(map, ctx, { what: "metrics", maxKeys: RECORD_LIMITS.maxMetricsPerRecord, maxKeyBytes: RECORD_LIMITS.maxMetricNameBytes }, () => 0),
  )
  .openapi({
    description: `Metric names (1 to ${RECORD_LIMITS.maxMetricNameBytes} bytes) to numbers; at most ${RECORD_LIMITS.maxMetricsPerRecord} per record and ${RECORD_LIMITS.maxMetricNamesPerRun} distinct names per run.`,
  });

/** `tags`: a list of strings. */
export const Tags = z
  .array(z.string())
  .superRefine((tags, ctx) => {
    if (tags.length > RECORD_LIMITS.maxTags) tooMany(ctx, tags.length, "tags", RECORD_LIMITS.maxTags);
    tags.forEach((tag, index) => {
      if (utf8Bytes(tag) > RECORD_LIMITS.maxTagBytes) tooLong(ctx, [index], tag, "Tag", RECORD_LIMITS.maxTagBytes);
    });
  })
  .openapi({ description: `At most ${RECORD_LIMITS.maxTags} tags of at most ${RECORD_LIMITS.maxTagBytes} bytes each.` });
