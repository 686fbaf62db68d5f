/**
 * The pure parts of alerts: a rule's next state and notification, its due minutes, where a channel
 * may send, the delivery's retry schedule, and the Standard Webhooks signature.
 */
import { describe, expect, it } from "vitest";
import { checkDestination, isNonPublicHost } from "../src/alerts/destination-rules";
import { delayAfter, isRetryable, retryAfterSeconds, retryDelays } from "../src/alerts/delivery-schedule";
import { dueMinuteFrom, isWatchableMetric, nextState, notificationFor, warningProblem } from "../src/alerts/rule-conditions";
import { signatureOf } from "../src/alerts/standard-webhooks";

const rule = { comparison: "gt" as const, threshold: 10, warningThreshold: 5, noData: "ok" as const };

describe("a rule's state", () => {
  it("fires past the threshold, warns past the warning threshold, else ok", () => {
    expect(nextState(rule, "ok", 3, 11)).toBe("firing");
    expect(nextState(rule, "ok", 3, 10)).toBe("warning");
    expect(nextState(rule, "firing", 3, 5)).toBe("ok");
    expect(nextState({ ...rule, comparison: "lte", threshold: 0.5, warningThreshold: 0.7 }, "ok", 3, 0.6)).toBe("warning");
    expect(nextState({ ...rule, comparison: "gte", warningThreshold: null }, "ok", 3, 10)).toBe("firing");
  });

  it("follows no_data when no trace is in the window (or the key has no value)", () => {
    expect(nextState(rule, "firing", 0, 0)).toBe("ok");
    expect(nextState({ ...rule, noData: "alert" }, "ok", 0, 0)).toBe("firing");
    expect(nextState({ ...rule, noData: "keep" }, "warning", 0, 0)).toBe("warning");
    expect(nextState({ ...rule, noData: "keep" }, "firing", 4, null)).toBe("firing");
  });

  it("notifies on a change of state, and while firing every renotify_minutes", () => {
    expect(notificationFor("ok", "firing", 100, null, null)).toBe("alert.firing");
    expect(notificationFor("firing", "warning", 100, 90, null)).toBe("alert.warning");
    expect(notificationFor("warning", "ok", 100, 90, null)).toBe("alert.resolved");
    expect(notificationFor("ok", "ok", 100, null, 5)).toBeNull();
    expect(notificationFor("firing", "firing", 100, 96, 5)).toBeNull();
    expect(notificationFor("firing", "firing", 101, 96, 5)).toBe("alert.firing");
    expect(notificationFor("firing", "firing", 500, 96, null)).toBeNull();
  });

  it("is due every evaluate_every_minutes from its creation minute", () => {
    expect(dueMinuteFrom(100, 5, 100)).toBe(100);
    expect(dueMinuteFrom(100, 5, 101)).toBe(105);
    expect(dueMinuteFrom(100, 5, 105)).toBe(105);
    expect(dueMinuteFrom(100, 1, 107)).toBe(107);
    expect(dueMinuteFrom(100, 60, 50)).toBe(100);
  });

  it("knows the keys of metrics/search and which side a warning goes", () => {
    for (const key of ["trace_count", "error_rate", "p99_latency_ns", "total_cost", "average_toxicity", "average_my.score"]) expect(isWatchableMetric(key)).toBe(true);
    for (const key of ["colour", "average_", "p42_latency_ns", "average_a b"]) expect(isWatchableMetric(key)).toBe(false);
    expect(warningProblem("gt", 10, 5)).toBeUndefined();
    expect(warningProblem("gt", 10, 10)).toMatch(/below/);
    expect(warningProblem("lt", 10, 12)).toBeUndefined();
    expect(warningProblem("lte", 10, 8)).toMatch(/above/);
  });
});

describe("where a channel may send", () => {
  it("deployed: https to public hosts only; Slack's host for Slack", () => {
    expect(checkDestination("https://example.com/hook", "webhook", false).ok).toBe(true);
    for (const url of ["http://example.com/hook", "https://127.0.0.1/x", "https://localhost/x", "https://10.1.2.3/x", "https://192.168.0.1/x", "https://169.254.169.254/latest", "https://[::1]/x", "https://[fe80::1]/x", "https://[fd00::1]/x", "https://0x7f000001/x", "https://2130706433/x", "https://db.internal/x", "https://[::ffff:127.0.0.1]/x"]) {
      expect(checkDestination(url, "webhook", false).ok, url).toBe(false);
    }
    expect(checkDestination("https://hooks.slack.com/services/T/B/X", "slack", false).ok).toBe(true);
    expect(checkDestination("https://example.com/services/T/B/X", "slack", false).ok).toBe(false);
  });

  it("under wrangler dev: http and local addresses too", () => {
    expect(checkDestination("http://127.0.0.1:8080/hook", "webhook", true).ok).toBe(true);
    expect(checkDestination("file:///etc/passwd", "webhook", true).ok).toBe(false);
    expect(isNonPublicHost("8.8.8.8")).toBe(false);
    expect(isNonPublicHost("172.20.0.1")).toBe(true);
  });
});

describe("the retry schedule", () => {
  it("backs off 5 s, 30 s, 2 min, 10 min, then hourly; Retry-After replaces a step, up to 1 hour", () => {
    const delays = retryDelays(undefined);
    expect([1, 2, 3, 4, 5, 6, 30].map((n) => delayAfter(n, delays, undefined))).toEqual([5, 30, 120, 600, 3600, 3600, 3600]);
    expect(delayAfter(1, delays, 90)).toBe(90);
    expect(delayAfter(1, delays, 86_400)).toBe(3600);
    expect(retryAfterSeconds("120", 0)).toBe(120);
    expect(retryAfterSeconds(new Date(60_000).toUTCString(), 0)).toBe(60);
    expect(retryAfterSeconds("soon", 0)).toBeUndefined();
    expect([null, 429, 500, 503].every(isRetryable)).toBe(true);
    expect([400, 404, 410].some(isRetryable)).toBe(false);
  });
});

describe("Standard Webhooks signatures", () => {
  it("match the specification's example", async () => {
    // The example of the specification's reference libraries (standard-webhooks/standard-webhooks, libraries' tests).
    const signature = await signatureOf("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}');
    expect(signature).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });
});
