/**
 * Where a channel may send (contract section 16): deployed, only `https` URLs whose host is not a
 * private, loopback, link-local (or otherwise non-public) address; under `wrangler dev` (npm start
 * and the tests set ALERT_DESTINATIONS=local) `http` and local addresses too, so that a receiver
 * on 127.0.0.1 works. Slack channels must point at Slack's incoming-webhook host.
 *
 * Host names are judged by their text: a Worker cannot resolve DNS before its fetch, and
 * Cloudflare's network does not route a Worker's fetch into private networks anyway; literal
 * addresses (IPv4 in any of its spellings that URL parsing normalises, IPv6 in brackets) and
 * names that mean this machine (`localhost`, `*.localhost`, `*.local`, `*.internal`) are refused.
 * Pure; test/alerts-destination-rules-unit.test.ts.
 */

export type DestinationVerdict = { ok: true; url: URL } | { ok: false; reason: string };

export const SLACK_HOST = "hooks.slack.com";

function ipv4Private(host: string): boolean {
  const parts = host.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return false;
  const [a, b] = parts as [number, number, number, number];
  return (
    a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) || (a === 192 && b === 0) || (a === 198 && (b === 18 || b === 19)) || a >= 224
  );
}

function ipv6Private(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "::" || h === "::1") return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
  if (mapped) return ipv4Private(mapped[1]!);
  if (/^::ffff:[0-9a-f]{1,4}:[0-9a-f]{1,4}$/.test(h)) return true;
  // fc00::/7 unique local, fe80::/10 link-local, ff00::/8 multicast.
  return /^f[cd][0-9a-f]{0,2}:/.test(h) || /^fe[89ab][0-9a-f]?:/.test(h) || /^ff[0-9a-f]{0,2}:/.test(h);
}

/** Whether the host names this machine or a private, loopback, link-local or reserved network. */
export function isNonPublicHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host.startsWith("[")) return ipv6Private(host);
  if (host === "localhost" || host.endsWith(".localhost") || host.endsWith(".local") || host.endsWith(".internal")) return true;
  return ipv4Private(host);
}

export function checkDestination(raw: string, type: "webhook" | "slack", allowLocal: boolean): DestinationVerdict {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "url is not an absolute URL" };
  }
  if (url.username || url.password) return { ok: false, reason: "url must not carry a user name or password (put a token in the path or query instead)" };
  if (url.protocol !== "https:" && !(allowLocal && url.protocol === "http:")) {
    return { ok: false, reason: allowLocal ? "url must be http or https" : "url must be https" };
  }
  if (!allowLocal && isNonPublicHost(url.hostname)) return { ok: false, reason: "url must not point at a private, loopback or link-local address" };
  if (type === "slack" && !allowLocal && (url.hostname !== SLACK_HOST || !url.pathname.startsWith("/services/"))) {
    return { ok: false, reason: `a Slack channel's url is an incoming webhook: https://${SLACK_HOST}/services/...` };
  }
  return { ok: true, url };
}

/** ALERT_DESTINATIONS=local: wrangler dev (npm start, tests). Anything else: deployed rules. */
export const allowsLocalDestinations = (value: string | undefined) => value === "local";
