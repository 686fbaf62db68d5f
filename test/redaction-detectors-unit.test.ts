/**
 * The built-in detectors against a labelled corpus (issue 33, point 4): every positive in the
 * formats people write it must be found whole (recall at least 0.99 per detector), and no
 * look-alike may be touched (zero false positives). Each positive is also embedded in prose,
 * after punctuation and inside JSON, where real traces carry it.
 */
import { describe, expect, it } from "vitest";
import { DETECTOR_NAMES, DETECTORS, type DetectorName } from "../src/redaction/detectors";
import { maskText } from "../src/redaction/mask-text";
import { maskStored } from "../src/redaction/mask-values";
import { customMatcher } from "../src/redaction/custom-patterns";
import { ibanValid, luhnValid } from "../src/redaction/checksums";

function luhnComplete(prefix: string, length: number, seed: number): string {
  let body = prefix;
  let x = seed;
  while (body.length < length - 1) {
    x = (x * 1103515245 + 12345) % 2147483648;
    body += String(x % 10);
  }
  for (let d = 0; d < 10; d++) if (luhnValid(body + d)) return body + d;
  throw new Error("unreachable");
}

function groupCard(digits: string, sep: string): string {
  if (digits.length === 15) return [digits.slice(0, 4), digits.slice(4, 10), digits.slice(10)].join(sep);
  return digits.match(/.{1,4}/g)!.join(sep);
}

function ibanWithCheck(country: string, bban: string): string {
  for (let c = 2; c <= 98; c++) {
    const iban = `${country}${String(c).padStart(2, "0")}${bban}`;
    if (ibanValid(iban)) return iban;
  }
  throw new Error("no check digits");
}

function jwtOf(header: object, payload: object, signature = "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"): string {
  const b64 = (o: object) => btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  return `${b64(header)}.${b64(payload)}.${signature}`;
}

const cardPrefixes: [string, number][] = [
  ["4", 16], ["4", 13], ["4", 19], ["51", 16], ["55", 16], ["2221", 16], ["2720", 16], ["34", 15], ["37", 15],
  ["6011", 16], ["65", 16], ["644", 16], ["36", 14], ["3528", 16], ["62", 16], ["62", 19], ["50", 16], ["67", 18],
];
const cards: string[] = [];
cardPrefixes.forEach(([prefix, length], i) => {
  for (let k = 0; k < 6; k++) {
    const digits = luhnComplete(prefix, length, i * 31 + k + 7);
    cards.push(digits, groupCard(digits, " "), groupCard(digits, "-"));
  }
});
cards.push("4111 1111 1111 1111", "4111-1111-1111-1111", "5555555555554444", "378282246310005", "3782 822463 10005", "6011 1111 1111 1117");

const ibans = [
  "DE89370400440532013000", "DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432", "GB82 WEST 1234 5698 7654 32",
  "FR1420041010050500013M02606", "FR14 2004 1010 0505 0001 3M02 606", "NL91ABNA0417164300", "NL91 ABNA 0417 1643 00",
  "ES9121000418450200051332", "IT60X0542811101000000123456", "BE68539007547034", "BE68 5390 0754 7034",
  "CH9300762011623852957", "AT611904300234573201", "PL61109010140000071219812874", "SE4550000000058398257466",
  "NO9386011117947", "IE29AIBK93115212345678", "PT50000201231234567890154", "DK5000400440116243",
  ...["10020030", "50010517", "12030000", "70150000"].map((blz, i) => ibanWithCheck("DE", blz + String(1234567890 + i * 7919).padStart(10, "0"))),
  ...["30004", "20041", "10096"].map((bank, i) => ibanWithCheck("FR", `${bank}00001${String(12345678901 + i).padStart(11, "0")}${String(10 + i)}`)),
];

const positives: Record<DetectorName, string[]> = {
  email: [
    "jane.doe@example.com", "j.smith+newsletter@mail.example.co.uk", "ADMIN@EXAMPLE.ORG", "first_last@sub.domain.example.io",
    "x@example.dev", "o'brien@example.com".replace("'", ""), "user-name@my-company.com", "a.b.c.d@e.example.museum",
    "support%team@example.net", "12345@numbers.example.com", "max.mustermann@beispiel.de", "jean.dupont@exemple.fr",
  ],
  phone: [
    "+1 212 555 0187", "+1 (212) 555-0187", "+12125550187", "+44 20 7946 0958", "+447700900123", "+49 30 12345678",
    "+49 171 1234567", "+33 1 23 45 67 89", "+33612345678", "+61 2 9876 5432", "+91 98765 43210", "+81-3-1234-5678",
    "(212) 555-0187", "212-555-0187", "212.555.0187", "1-212-555-0187", "1 (800) 555-0199", "415 555 2671",
    "020 7946 0958", "07700 900123", "0161 496 0000", "(020) 7946 0958", "01632 960000",
    "030 12345678", "030/12345678", "0171 1234567", "0171-1234567", "(0221) 123456", "089 1234 5678",
    "01 23 45 67 89", "06 12 34 56 78", "01.23.45.67.89", "06-12-34-56-78",
  ],
  credit_card: cards,
  us_ssn: ["123-45-6789", "078-05-1120", "219-09-9999", "123 45 6789", "665-12-3456", "899-99-9998", "001-01-0001", "501-42-7777"],
  iban: ibans,
  ip_address: [
    "192.168.1.1", "10.0.0.254", "8.8.8.8", "203.0.113.45", "255.255.255.255", "172.16.254.1", "0.0.0.0",
    "2001:db8::1", "2001:0db8:85a3:0000:0000:8a2e:0370:7334", "fe80::1ff:fe23:4567:890a", "::1", "2001:db8:0:0:1:0:0:1",
    "::ffff:192.0.2.128", "2606:4700:4700::1111",
  ],
  api_key: [
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk",
    "sk-9aB8cD7eF6gH5iJ4kL3mN2oP1qR0sT9uV8wX7yZ6aB5cD4eF",
    "sk-ant-api03-Xy9_Zw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa-AbCdEfGh",
    "sk-ant-admin01-abcDEF123ghiJKL456mnoPQR789stu",
    "AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxp-1234-5678-91011-abcdef0123456789",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "rk_live_51H8abcdEFGHijklMNOPqrst", "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI",
  ],
  jwt: [
    jwtOf({ alg: "HS256", typ: "JWT" }, { sub: "1234567890", name: "John Doe", iat: 1516239022 }),
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    jwtOf({ alg: "RS256", kid: "key-1" }, { iss: "https://issuer.example", exp: 1900000000 }),
    jwtOf({ typ: "JWT", alg: "ES384" }, { scope: "read write" }, "MEUCIQD-abc_def"),
    jwtOf({ alg: "none" }, { sub: "x" }, ""),
  ],
  url_credentials: [
    "postgres://admin:s3cret@db.example.com:5432/app", "https://user:pa55word@example.com/path", "redis://default:hunter2@cache:6379",
    "mongodb+srv://app_user:Tr0ub4dor&3@cluster0.example.net/db", "ftp://anon:guest@files.example.org",
    "amqp://rabbit:carrot%40x@mq.internal",
  ],
};

/** The region the detector must replace, when it is not the whole positive. */
function expectedRegion(name: DetectorName, positive: string): string {
  if (name !== "url_credentials") return positive;
  const afterScheme = positive.slice(positive.indexOf("://") + 3);
  return afterScheme.slice(0, afterScheme.lastIndexOf("@"));
}

const lookAlikes = [
  // Luhn-invalid digit runs, grouped like cards.
  "4111 1111 1111 1112", "4111111111111112", "5555-5555-5555-4445", "1234 5678 9012 3456", "378282246310006",
  // UUIDs.
  "550e8400-e29b-41d4-a716-446655440000", "123e4567-e89b-12d3-a456-426614174000", "f47ac10b-58cc-4372-a567-0e02b2c3d479",
  // Timestamps.
  "2024-01-15T10:30:00Z", "2024-01-15 10:30:00.123456", "1705314600", "1705314600123", "10:30:00", "Mon, 15 Jan 2024 10:30:00 GMT",
  "01.02.2024", "15/03/2024", "12/31/2023 23:59", "2024-01-15T10:30:00+01:00", "20240115103000",
  // Order numbers, invoices, tickets.
  "ORD-2024-000123", "order #123456789", "INV-00012345", "PO 4500012345", "ticket 20240115-0042", "#1234-5678",
  "SKU 12345-678-90", "tracking 1Z999AA10123456784", "2024-0001-0002",
  // Hashes.
  "d41d8cd98f00b204e9800998ecf8427e", "da39a3ee5e6b4b0d3255bfef95601890afd80709",
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "git commit 4f2a9c1", "sha256:9f86d081884c7d659a2feaa0c55ad015",
  // Version strings.
  "v1.2.3", "1.2.3", "2.14.0-beta.1", "10.0.19041.1", "node 20.11.1", "python==3.11.4", "1.2.3.4.5", "v192.168.1.1",
  // Words and identifiers that share a prefix with a key.
  "sk-learn", "scikit-learn is imported as sklearn, not sk-learn", "sk-learn-preprocessing-pipeline-step",
  "risk-assessment", "desk-top", "ask-me-anything", "AKIA", "task_live_update", "xoxo", "ghp_short",
  // Prose and code that contain separators.
  "std::vector<int>", "a::b::c", "Foo::bar()", "user@", "@mention", "email me at jane dot doe",
  "https://example.com/path?a=1", "http://localhost:8787/v2", "mailto:", "ratio 3:2:1", "12:34:56:78",
  "000-00-0000", "666-12-3456", "900-12-3456", "123-00-4567", "123-45-0000",
  "DE89370400440532013001", "GB00WEST12345698765432", "XX89370400440532013000",
  "eyJub3Rqc29u.eyJzdWIiOiIxIn0.sig", "eyJ0eXAiOiJKV1QifQ.eyJzdWIiOiIxIn0.sig",
  "page 1 of 20", "3.14159", "1,234,567.89", "$1,299.00", "99.99%", "ISBN 978-3-16-148410-0",
  "12345", "123456789", "0123456789", "00 11 22 33 44",
];

describe("built-in detectors: the labelled corpus", () => {
  const contexts = [
    (v: string) => v,
    (v: string) => `Please use ${v} for this.`,
    (v: string) => `(${v}), then more text`,
    (v: string) => `line one\n${v}\nline three`,
  ];

  for (const name of DETECTOR_NAMES) {
    it(`${name}: recall at least 0.99 over ${positives[name].length * contexts.length} positives`, () => {
      const detector = DETECTORS.find((d) => d.name === name)!;
      const missed: string[] = [];
      let total = 0;
      for (const positive of positives[name]) {
        for (const context of contexts) {
          total++;
          const text = context(positive);
          const expected = context(positive).replace(expectedRegion(name, positive), `[REDACTED:${name}]`);
          if (maskText(text, [detector]) !== expected) missed.push(text);
        }
      }
      const recall = (total - missed.length) / total;
      expect(missed, `missed ${missed.length} of ${total}`).toEqual([]);
      expect(recall).toBeGreaterThanOrEqual(0.99);
    });
  }

  it("no detector touches a look-alike", () => {
    const touched: string[] = [];
    for (const text of lookAlikes) {
      for (const context of [(v: string) => v, (v: string) => `see ${v} here`]) {
        const masked = maskText(context(text), DETECTORS);
        if (masked !== context(text)) touched.push(`${context(text)} -> ${masked}`);
      }
    }
    expect(touched).toEqual([]);
  });
});

describe("masking rules", () => {
  it("keeps the longest of overlapping matches, then the detector listed first", () => {
    // A phone number used as a password: the longer credential region wins.
    expect(maskText("redis://admin:+12125550187@cache/0", DETECTORS)).toBe("redis://[REDACTED:url_credentials]@cache/0");
    // A password followed by its host is not an e-mail address; mailto: is.
    expect(maskText("db postgres://app:hunter-2a@db.internal/x", DETECTORS)).toBe("db postgres://[REDACTED:url_credentials]@db.internal/x");
    expect(maskText("write to mailto:jane@example.com", DETECTORS)).toBe("write to mailto:[REDACTED:email]");
    // Equal length: the one listed first (built-in detectors come before custom patterns).
    const custom = customMatcher({ name: "staff", pattern: "[a-z]+@example\\.com" });
    expect(maskText("x jane@example.com y", [...DETECTORS, custom])).toBe("x [REDACTED:email] y");
    expect(maskText("x jane@example.com y", [custom, ...DETECTORS])).toBe("x [REDACTED:staff] y");
    // A phone inside a longer card-like run is not cut out of it.
    expect(maskText("card 4111 1111 1111 1111 exp 12/25", DETECTORS)).toBe("card [REDACTED:credit_card] exp 12/25");
    expect(maskText("4111111111111111 12/25", DETECTORS)).toBe("[REDACTED:credit_card] 12/25");
  });

  it("replaces every occurrence and leaves the rest byte for byte", () => {
    const text = "From jane@example.com to bob@example.org: call +1 212 555 0187, SSN 123-45-6789. Done ✓";
    expect(maskText(text, DETECTORS)).toBe(
      "From [REDACTED:email] to [REDACTED:email]: call [REDACTED:phone], SSN [REDACTED:us_ssn]. Done ✓",
    );
  });

  it("walks message lists, documents and nested JSON strings; keys stay", () => {
    const messages = JSON.stringify([
      { role: "user", content: "my card is 4111 1111 1111 1111" },
      { role: "assistant", content: "", tool_calls: [{ function: { name: "lookup", arguments: '{"email":"jane@example.com","note":"\\n4111111111111111"}' } }] },
    ]);
    const masked = JSON.parse(maskStored(messages, true, DETECTORS)!) as { content: string; tool_calls?: { function: { arguments: string } }[] }[];
    expect(masked[0]!.content).toBe("my card is [REDACTED:credit_card]");
    expect(JSON.parse(masked[1]!.tool_calls![0]!.function.arguments)).toEqual({ email: "[REDACTED:email]", note: "\n[REDACTED:credit_card]" });
    const docs = JSON.stringify([{ content: "IP 10.1.2.3", metadata: { "jane@example.com": "owner jane@example.com" } }]);
    expect(JSON.parse(maskStored(docs, true, DETECTORS)!)).toEqual([
      { content: "IP [REDACTED:ip_address]", metadata: { "jane@example.com": "owner [REDACTED:email]" } },
    ]);
  });

  it("answers the same string when nothing matched", () => {
    const text = "nothing to see here, version 1.2.3 at 2024-01-15T10:30:00Z";
    expect(maskText(text, DETECTORS)).toBe(text);
    const json = '[{"role":"user","content":"hello"}]';
    expect(maskStored(json, true, DETECTORS)).toBe(json);
  });
});
