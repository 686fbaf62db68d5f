/**
 * Counts the values of a JSON text and its nesting on the raw bytes, before anything is parsed.
 *
 * Bytes bound how long a body takes to read, not what parsing it builds: `{"traces":[{},{},...]}`
 * holds 3.5 million objects in 10 MiB, about 500 MB once `JSON.parse` has built them, and an
 * isolate has 128 MB. Each value costs a parser tens of bytes whatever its size, so the count of
 * values (with the byte cap) is what bounds the memory of the objects a body becomes. The scan
 * keeps no more than a few numbers and one bit per level, and stops as soon as a cap is passed.
 *
 * A value is an object, an array, a string (not a member name), a number, `true`, `false` or
 * `null`. Malformed JSON is counted as far as it goes and left for the parser to refuse: the
 * count only needs to be exact for a text the parser accepts.
 */

export interface JsonShape {
  /** Values counted (when `over` is set, the count where the scan stopped). */
  values: number;
  /** Deepest nesting of objects and arrays seen. */
  depth: number;
  /** The cap the text passes, if any. */
  over?: "values" | "depth";
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

const isWhitespace = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/**
 * The shape of `text` (UTF-8 bytes or a string), stopping at the first value past `maxValues` or
 * the first level past `maxDepth`. UTF-8 continuation bytes are all above 0x7f, so they never look
 * like JSON's punctuation and the bytes can be scanned without decoding them. A string is scanned
 * as its UTF-8 encoding: one loop over one kind of array keeps the scan monomorphic, and so fast.
 */
export function jsonShape(text: Uint8Array | string, maxValues: number, maxDepth: number): JsonShape {
  const bytes = typeof text === "string" ? new TextEncoder().encode(text) : text;
  const length = bytes.length;
  // One entry per open level: whether it is an object (its strings alternate name and value).
  const inObject: boolean[] = [];
  let values = 0;
  let deepest = 0;
  let expectingName = false;
  let inScalar = false;
  for (let i = 0; i < length; i++) {
    const byte = bytes[i]!;
    if (byte === QUOTE) {
      inScalar = false;
      i = closingQuote(bytes, i + 1);
      if (expectingName && inObject[inObject.length - 1]) {
        expectingName = false;
        continue;
      }
      if (++values > maxValues) return { values, depth: deepest, over: "values" };
      continue;
    }
    if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      inScalar = false;
      if (++values > maxValues) return { values, depth: deepest, over: "values" };
      inObject.push(byte === OPEN_OBJECT);
      expectingName = byte === OPEN_OBJECT;
      if (inObject.length > deepest) {
        deepest = inObject.length;
        if (deepest > maxDepth) return { values, depth: deepest, over: "depth" };
      }
      continue;
    }
    if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      inScalar = false;
      inObject.pop();
      expectingName = false;
      continue;
    }
    if (byte === COMMA) {
      inScalar = false;
      expectingName = inObject[inObject.length - 1] === true;
      continue;
    }
    if (byte === COLON || isWhitespace(byte)) {
      inScalar = false;
      continue;
    }
    // A number or a literal: counted at its first byte.
    if (!inScalar) {
      inScalar = true;
      if (++values > maxValues) return { values, depth: deepest, over: "values" };
    }
  }
  return { values, depth: deepest };
}

/**
 * Where the string whose first byte is at `from` ends: its closing quote, the first quote after
 * an even run of backslashes (an odd run escapes it), or the end of the text for an unterminated
 * string. Found with the native `indexOf`: most of a body's bytes are inside strings, and a byte
 * at a time in JavaScript is what made the scan cost as much as JSON.parse.
 */
function closingQuote(bytes: Uint8Array, from: number): number {
  for (let quote = bytes.indexOf(QUOTE, from); quote !== -1; quote = bytes.indexOf(QUOTE, quote + 1)) {
    let backslashes = 0;
    while (quote - backslashes - 1 >= from && bytes[quote - backslashes - 1] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
  }
  return bytes.length;
}

/**
 * Whether a JSON text nests deeper than `maxDepth`. JSON.stringify and every walk of a parsed
 * value recurse once per level: text nested thousands deep (`[[[[...]]]]` in an attribute) would
 * overflow the stack when it is written back, so such text is kept as text.
 */
export function nestsDeeperThan(text: string, maxDepth: number): boolean {
  // Each level opens with a bracket: a text with no more brackets than maxDepth cannot nest
  // deeper, and counting them (native indexOf) costs far less than the scan, which the search
  // and the export run on every stored JSON text of every record they answer.
  if (text.length <= maxDepth || openingBrackets(text, maxDepth) <= maxDepth) return false;
  return jsonShape(text, Number.POSITIVE_INFINITY, maxDepth).over === "depth";
}

/** `[` and `{` in a text, counted up to `limit` + 1. */
function openingBrackets(text: string, limit: number): number {
  let found = 0;
  for (const bracket of ["[", "{"]) {
    for (let i = text.indexOf(bracket); i !== -1 && found <= limit; i = text.indexOf(bracket, i + 1)) found += 1;
  }
  return found;
}
