/**
 * The built-in detectors of contract section 14, in the contract's order (the order breaks ties
 * between overlapping matches of equal length).
 *
 * Each detector is a regular expression whose every quantifier is bounded (no `+` or `*`, no
 * nested quantifier that can backtrack over the same text twice), so the work per start position
 * is a constant and a scan is linear in the text's length; a cheap prefilter (a character the
 * token must contain) skips the scan on most texts. A candidate is then checked by what makes it
 * real (Luhn, mod 97, valid SSN areas, a decodable JWT header, an issuer's prefix and length),
 * which is where the precision comes from. docs/redaction.md lists the formats each one knows.
 */
import { ibanLengthOfCodes, ibanValid, luhnValid, ssnValid } from "./checksums";

export const DETECTOR_NAMES = [
  "email", "phone", "credit_card", "us_ssn", "iban", "ip_address", "api_key", "jwt", "url_credentials",
] as const;
export type DetectorName = (typeof DETECTOR_NAMES)[number];

/** A region to replace: [start, end) in UTF-16 units. */
export type Span = [number, number];

export interface Detector {
  name: DetectorName;
  /** Cheap test: false means the text cannot hold a match. */
  mayMatch: (text: string) => boolean;
  /** Pushes the region of every match. */
  find: (text: string, out: Span[]) => void;
}

/**
 * Runs a global regex over the text; `accept` turns a match into the region to replace, or null
 * when the candidate is not real (the scan then resumes one character later, so a rejected
 * candidate never hides a real one that starts inside it).
 */
function scanner(pattern: RegExp, accept: (m: RegExpExecArray, text: string) => Span | null): (text: string, out: Span[]) => void {
  // Compiled once; a scan is synchronous, so sharing the regex (and its lastIndex) is safe.
  const re = new RegExp(pattern.source, pattern.flags.includes("g") ? pattern.flags : `${pattern.flags}g`);
  return (text, out) => {
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(text)) !== null) {
      const region = accept(m, text);
      if (region) {
        out.push(region);
        re.lastIndex = Math.max(region[1], m.index + 1);
      } else {
        re.lastIndex = m.index + 1;
      }
    }
  };
}

const whole = (m: RegExpExecArray): Span => [m.index, m.index + m[0].length];
const digitsOf = (s: string) => s.replace(/\D/g, "");
const hasDigit = (text: string) => /\d/.test(text);

// ---- email -----------------------------------------------------------------------------------
const EMAIL =
  /(?<![A-Za-z0-9._%+-])[A-Za-z0-9_%+-](?:[A-Za-z0-9._%+-]{0,63})@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}(?![A-Za-z0-9-])/;

/**
 * `scheme://user:secret@host` is a URL's credentials, not an e-mail address `secret@host`: an
 * address right after a `:` whose word (back to the last whitespace, at most 300 characters)
 * holds `://` is left to url_credentials.
 */
function emailValid(m: RegExpExecArray, text: string): Span | null {
  if (m.index > 0 && text.charCodeAt(m.index - 1) === 58) {
    const from = Math.max(0, m.index - 300);
    const before = text.slice(from, m.index);
    const word = before.slice(Math.max(before.lastIndexOf(" "), before.lastIndexOf("\n"), before.lastIndexOf("\t")) + 1);
    if (word.includes("://")) return null;
  }
  return whole(m);
}

// ---- phone -----------------------------------------------------------------------------------
/** E.164 written with its `+`: 8 to 15 digits, single spaces, dots, dashes or parentheses between. */
const PHONE_E164 = /(?<![\w+])\+[1-9](?:[ .\-()]{0,2}\d){7,14}(?![\w])/;
/** US/Canada (NANP): (212) 555-0187, 212-555-0187, 212.555.0187, 1 212 555 0187; separators required. */
const PHONE_NANP = /(?<![\w+.-])(?:1[ .-]?)?(?:\(\d{3}\)[ .-]?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\w]|[.-]\d)/;
/**
 * National forms with a trunk 0 (UK, Germany, France, and most of Europe): 020 7946 0958,
 * 07700 900123, (0221) 123456, 030/12345678, 01 23 45 67 89. A separator is required (a bare
 * digit run is an order number as often as a phone) and 9 to 12 digits in all.
 */
const PHONE_TRUNK = /(?<![\w+./:-])(?:\(0[1-9]\d{0,4}\)|0[1-9]\d{0,4})(?:[ ./-]\d{2,8}){1,4}(?![\w:/]|[.-]\d)/;
/** A date such as 01.02.2024 or 15/03/2024 12 is not a phone. */
const DATE_LIKE = /^\(?\d{2}[./-]\d{2}[./-](?:19|20)\d{2}/;

function nanpValid(m: RegExpExecArray): Span | null {
  const digits = digitsOf(m[0]);
  const local = digits.length === 11 ? digits.slice(1) : digits;
  // Area code and exchange start with 2-9 (NANP numbering plan).
  if (local.length !== 10 || local[0]! < "2" || local[3]! < "2") return null;
  return whole(m);
}

function trunkValid(m: RegExpExecArray): Span | null {
  const n = digitsOf(m[0]).length;
  if (n < 9 || n > 12 || DATE_LIKE.test(m[0])) return null;
  return whole(m);
}

function e164Valid(m: RegExpExecArray): Span | null {
  const n = digitsOf(m[0]).length;
  // A `(` or `)` must pair up: "+1 (555) 123-4567" yes, "+1 555) 1234567" no.
  const open = m[0].split("(").length - 1;
  if (n < 8 || n > 15 || open !== m[0].split(")").length - 1) return null;
  return whole(m);
}

// ---- credit_card -----------------------------------------------------------------------------
/** 13 to 19 digits, optionally grouped by single spaces or dashes. */
// Not right after "digit, separator": that is the middle of a grouped run, and starting there
// again at every digit of a long "1 1 1 1 …" would cost each position a full attempt.
const CARD = /(?<![\w.,-]|\d[ -])\d(?:[ -]?\d){12,18}(?![\w]|[.,-]\d|[ -]\d)/;

/** Issuer prefixes and the lengths they issue (ISO/IEC 7812 ranges of the major networks). */
function cardIssuerValid(d: string): boolean {
  const n = d.length;
  const p2 = Number(d.slice(0, 2));
  const p4 = Number(d.slice(0, 4));
  if (d[0] === "4") return n === 13 || n === 16 || n === 19; // Visa
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return n === 16; // Mastercard
  if (p2 === 34 || p2 === 37) return n === 15; // American Express
  if (p4 === 6011 || p2 === 65 || (p4 >= 6440 && p4 <= 6499)) return n >= 16; // Discover
  if (p2 === 36 || p2 === 38 || (p4 >= 3000 && p4 <= 3059)) return n >= 14; // Diners Club
  if (p4 >= 3528 && p4 <= 3589) return n >= 16; // JCB
  if (p2 === 62) return n >= 16; // UnionPay
  if (p2 === 50 || (p2 >= 56 && p2 <= 69)) return n >= 13; // Maestro
  return false;
}

/**
 * The longest prefix of a grouped match, cut at a separator, that `valid` accepts: the regex is
 * greedy, so "4111 1111 1111 1111 12/25" first offers the expiry month as a fifth group, and
 * "BE68 5390 0754 7034 from" the next word.
 */
function longestGroupedPrefix(m: RegExpExecArray, separator: string, valid: (prefix: string) => boolean): Span | null {
  let text = m[0];
  for (;;) {
    if (valid(text)) return [m.index, m.index + text.length];
    const cut = text.lastIndexOf(separator);
    if (cut <= 0) return null;
    text = text.slice(0, cut);
  }
}

function cardValid(m: RegExpExecArray): Span | null {
  const sep = m[0].match(/[ -]/g);
  // Grouped numbers use one kind of separator.
  if (sep && new Set(sep).size > 1) return null;
  return longestGroupedPrefix(m, sep ? sep[0]! : "\u0000", (prefix) => {
    const d = digitsOf(prefix);
    return d.length >= 13 && cardIssuerValid(d) && luhnValid(d);
  });
}

// ---- us_ssn ----------------------------------------------------------------------------------
const SSN = /(?<![\w.-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\w]|[.-]\d)/;

// ---- iban ------------------------------------------------------------------------------------
/** IBANs: compact (DE89370400440532013000) or grouped by four (DE89 3704 0044 0532 0130 00); see findIbans. */

const isAlnum = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isDigit = (c: number) => c >= 48 && c <= 57;

/**
 * IBANs by a hand-written scan rather than a regular expression: a text of many IBAN-like
 * starts (`DE89 DE89 …`) made the regex build one match object per start, a few hundred
 * milliseconds a megabyte; this loop reads character codes only. At each start (two letters
 * after a non-alphanumeric, two digits) the country fixes the length, and exactly that many
 * alphanumerics must follow, compact or in groups of four split by single spaces, and then a
 * non-alphanumeric; the mod-97 check runs on those alone.
 */
function findIbans(text: string, out: Span[]): void {
  const n = text.length;
  for (let i = 0; i + 15 <= n; i++) {
    const c0 = text.charCodeAt(i);
    if (!isLetter(c0) || (i > 0 && isAlnum(text.charCodeAt(i - 1)))) continue;
    if (!isLetter(text.charCodeAt(i + 1)) || !isDigit(text.charCodeAt(i + 2)) || !isDigit(text.charCodeAt(i + 3))) continue;
    const length = ibanLengthOfCodes(c0, text.charCodeAt(i + 1));
    if (length === 0) continue;
    const region = ibanExtent(text, i, length);
    if (region !== null && ibanValid(text.slice(i, region).replace(/ /g, ""))) {
      out.push([i, region]);
      i = region - 1;
    }
  }
}

/** Where an IBAN of `length` alphanumerics starting at `start` ends (compact or grouped by four), or null. */
function ibanExtent(text: string, start: number, length: number): number | null {
  const n = text.length;
  // Compact: `length` alphanumerics in a row.
  let end = start;
  while (end < n && end - start < length && isAlnum(text.charCodeAt(end))) end++;
  if (end - start === length && (end === n || !isAlnum(text.charCodeAt(end)))) return end;
  // Grouped: a single space after each group of four.
  if (text.charCodeAt(start + 4) !== 32) return null;
  let count = 0;
  end = start;
  while (count < length && end < n) {
    const c = text.charCodeAt(end);
    if (isAlnum(c)) {
      count++;
      end++;
    } else if (c === 32 && count % 4 === 0 && count > 0 && end + 1 < n && isAlnum(text.charCodeAt(end + 1))) {
      end++;
    } else {
      return null;
    }
  }
  return count === length && (end === n || !isAlnum(text.charCodeAt(end))) ? end : null;
}

// ---- ip_address ------------------------------------------------------------------------------
const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
/** A dotted quad (not part of a longer dotted run such as a five-part version). */
const IPV4 = new RegExp(`(?<![\\w.])${OCTET}(?:\\.${OCTET}){3}(?![\\w]|\\.\\d)`);
/** Candidate IPv6 text: hex groups and colons, possibly ending in a dotted quad. */
const IPV6 = new RegExp(`(?<![\\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|${OCTET}(?:\\.${OCTET}){3})?(?![\\w:]|\\.\\d)`);

function ipv6Valid(m: RegExpExecArray): Span | null {
  const text = m[0];
  const v4Tail = text.includes(".");
  const parts = text.split(":");
  const doubles = text.split("::").length - 1;
  if (doubles > 1) return null;
  const groups = parts.filter((p) => p !== "");
  const width = groups.length + (v4Tail ? 1 : 0); // a dotted quad takes two groups
  if (doubles === 0) {
    if (width !== 8 || parts.some((p) => p === "")) return null;
  } else {
    if (width > 7) return null;
    // A lone "::" edge is allowed only as the compression itself: ":a:b" or "a:b:" are not addresses.
    if ((text.startsWith(":") && !text.startsWith("::")) || (text.endsWith(":") && !text.endsWith("::"))) return null;
    // "::1" and "fe80::1" are addresses; "a::b" (C++, Rust paths) is not claimed without a digit.
    if (text !== "::1" && (groups.length < 2 || !hasDigit(text))) return null;
  }
  return whole(m);
}

// ---- api_key ---------------------------------------------------------------------------------
const API_KEY = new RegExp(
  [
    "sk-ant-[A-Za-z0-9]{2,12}-[A-Za-z0-9_-]{20,200}", // Anthropic (sk-ant-api03-..., sk-ant-admin01-...)
    "sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,200}", // OpenAI
    "(?:AKIA|ASIA)[A-Z0-9]{16}", // AWS access key ids
    "gh[pousr]_[A-Za-z0-9]{36,255}", // GitHub tokens
    "github_pat_[A-Za-z0-9_]{22,255}", // GitHub fine-grained tokens
    "xox[abposr]-[A-Za-z0-9-]{10,250}", // Slack
    "(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,250}", // Stripe secret and restricted keys
    "AIza[0-9A-Za-z_-]{35}", // Google API keys
  ]
    .map((p) => `(?:${p})`)
    .join("|")
    .replace(/^/, "(?<![A-Za-z0-9_-])(?:")
    .concat(")(?![A-Za-z0-9_-])"),
);

/**
 * OpenAI's `sk-` keys are random: a digit, an upper and a lower case letter somewhere. Without
 * this, prose such as "sk-learn-preprocessing-pipeline" would be a key.
 */
function apiKeyValid(m: RegExpExecArray): Span | null {
  const token = m[0];
  if (token.startsWith("sk-") && !token.startsWith("sk-ant-")) {
    const body = token.replace(/^sk-(?:proj-|svcacct-|admin-|None-)?/, "");
    if (!/\d/.test(body) || !/[A-Z]/.test(body) || !/[a-z]/.test(body)) return null;
  }
  return whole(m);
}

// ---- jwt -------------------------------------------------------------------------------------
const JWT = /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{2,4096}\.[A-Za-z0-9_-]{2,16384}\.[A-Za-z0-9_-]{0,4096}(?![A-Za-z0-9_.-])/;

function base64UrlDecode(part: string): string | null {
  try {
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
    return atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  } catch {
    return null;
  }
}

function jwtValid(m: RegExpExecArray): Span | null {
  const header = base64UrlDecode(m[0].slice(0, m[0].indexOf(".")));
  if (header === null) return null;
  try {
    const parsed = JSON.parse(header) as unknown;
    return parsed !== null && typeof parsed === "object" && "alg" in parsed ? whole(m) : null;
  } catch {
    return null;
  }
}

// ---- url_credentials -------------------------------------------------------------------------
/** scheme://user:password@ — the region replaced is `user:password`. */
const URL_CREDENTIALS = /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/([^\s\/?#@:]{1,256}:[^\s\/?#@]{1,256})@/;

function urlCredentials(m: RegExpExecArray): Span | null {
  const start = m.index + m[0].indexOf("://") + 3;
  return [start, start + m[1]!.length];
}

export const DETECTORS: readonly Detector[] = [
  { name: "email", mayMatch: (t) => t.includes("@"), find: scanner(EMAIL, emailValid) },
  {
    name: "phone",
    mayMatch: hasDigit,
    find: (text, out) => {
      if (text.includes("+")) scanner(PHONE_E164, e164Valid)(text, out);
      scanner(PHONE_NANP, nanpValid)(text, out);
      if (text.includes("0")) scanner(PHONE_TRUNK, trunkValid)(text, out);
    },
  },
  { name: "credit_card", mayMatch: hasDigit, find: scanner(CARD, cardValid) },
  {
    name: "us_ssn",
    mayMatch: hasDigit,
    find: scanner(SSN, (m) => (ssnValid(m[1]!, m[3]!, m[4]!) ? whole(m) : null)),
  },
  {
    name: "iban",
    mayMatch: hasDigit,
    find: findIbans,
  },
  {
    name: "ip_address",
    mayMatch: (t) => t.includes(".") || t.includes(":"),
    find: (text, out) => {
      if (text.includes(".")) scanner(IPV4, whole)(text, out);
      if (text.includes(":")) scanner(IPV6, ipv6Valid)(text, out);
    },
  },
  {
    name: "api_key",
    mayMatch: (t) => /sk-|AKIA|ASIA|gh[pousr]_|github_pat_|xox|_live_|_test_|AIza/.test(t),
    find: scanner(API_KEY, apiKeyValid),
  },
  { name: "jwt", mayMatch: (t) => t.includes("eyJ"), find: scanner(JWT, jwtValid) },
  { name: "url_credentials", mayMatch: (t) => t.includes("://"), find: scanner(URL_CREDENTIALS, urlCredentials) },
];
