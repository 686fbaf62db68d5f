/**
 * LLM judges through a real `wrangler dev` (contract section 15): the judge is a local
 * OpenAI-compatible server this test starts on 127.0.0.1 (real HTTP, the chat-completions wire
 * format). A record written to a run with a judge enabled is scored after the write with the
 * judge's JSON answer, explanation, tokens and cost; the key goes as `Bearer`; `num_judges`
 * calls are averaged; a 429 is retried after its Retry-After; a 400 leaves `error` with the
 * reason, counted by GET on the scorer; the key is never returned.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "./sdk-service";

interface Call {
  headers: Record<string, string>;
  body: { model: string; messages: { role: string; content: string }[]; response_format: { type: string; json_schema: { schema: { properties: Record<string, unknown> } } } };
  at: number;
}

const calls: Call[] = [];
/** Answers to give before the judgement, in order. */
const failures: { status: number; headers?: Record<string, string> }[] = [];
let judge: http.Server;
let origin: string;
let service: RunningService;

async function api(path: string, body?: unknown, method = body === undefined ? "GET" : "POST") {
  const response = await fetch(`${service.apiUrl}${path}`, {
    method,
    headers: { "content-type": "application/json", "Service-API-Key": service.tenant.apiKey },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

beforeAll(async () => {
  judge = http.createServer((request, response) => {
    let raw = "";
    request.setEncoding("utf8");
    request.on("data", (chunk) => (raw += chunk));
    request.on("end", () => {
      const body = JSON.parse(raw) as Call["body"];
      calls.push({ headers: request.headers as Record<string, string>, body, at: Date.now() });
      const failure = body.messages.some((m) => m.content.includes("flaky")) || body.messages.some((m) => m.content.includes("broken")) ? failures.shift() : undefined;
      if (failure) {
        response.writeHead(failure.status, { "content-type": "application/json", ...failure.headers });
        response.end(JSON.stringify({ error: { message: "no" } }));
        return;
      }
      const user = body.messages.find((m) => m.role === "user")!.content;
      const polite = !user.includes("rude");
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          id: "chatcmpl-1",
          object: "chat.completion",
          model: body.model,
          choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: JSON.stringify({ score: polite, explanation: polite ? "Courteous." : "Insulting." }) } }],
          usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => judge.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(judge.address() as AddressInfo).port}`;
  service = await startService({ vars: { JUDGE_DESTINATIONS: "local", JUDGE_RETRY_DELAYS_SECONDS: "1" } });
}, 400_000);

afterAll(async () => {
  await service?.stop();
  await new Promise((resolve) => judge?.close(resolve));
});

async function scoredInfo(projectId: string, streamId: string, traceId: string, name: string, status = "success") {
  let info: Record<string, unknown> | undefined;
  await expect
    .poll(
      async () => {
        const found = await api(`/projects/${projectId}/traces/partial_search`, { log_stream_id: streamId, include_code_metric_metadata: true, limit: 50 });
        const record = (found.body.records as { id: string; metric_info?: Record<string, Record<string, unknown>> }[]).find((r) => r.id === traceId);
        info = record?.metric_info?.[name];
        return info?.status_type;
      },
      { timeout: 60_000, interval: 500 },
    )
    .toBe(status);
  return info!;
}

describe("LLM judges under wrangler dev", () => {
  let projectId: string;
  let streamId: string;
  let scorerId: string;

  it("scores a new record with the judge's answer, tokens and cost, calling it num_judges times", async () => {
    const integration = await api("/integrations/custom", { endpoint: `${origin}/v1`, api_key_value: "sk-test-secret", models: ["gpt-4o-mini"], requests_per_minute: 600 }, "PUT");
    expect(integration.status, JSON.stringify(integration.body)).toBe(200);
    expect(JSON.stringify(integration.body)).not.toContain("sk-test-secret");
    expect(JSON.stringify((await api("/integrations")).body)).not.toContain("sk-test-secret");
    const scorer = await api("/scorers", { name: "polite", scorer_type: "llm", output_type: "boolean", scoreable_node_types: ["trace"] });
    scorerId = scorer.body.id;
    const version = await api(`/scorers/${scorerId}/version/llm`, { instructions: "You judge politeness.", user_prompt: "Is this polite? {output} (lang {metadata.lang})", model_name: "gpt-4o-mini", num_judges: 3 });
    expect(version.status, JSON.stringify(version.body)).toBe(200);
    projectId = (await api("/projects", { name: `judged-${Date.now().toString(36)}` })).body.id;
    streamId = (await api(`/projects/${projectId}/log_streams`, { name: "default" })).body.id;
    expect((await api(`/projects/${projectId}/log_streams/${streamId}/metric_settings`, { scorers: [{ id: scorerId }] }, "PATCH")).status).toBe(200);
    const traceId = crypto.randomUUID();
    const rudeId = crypto.randomUUID();
    const written = await api(`/projects/${projectId}/traces`, {
      log_stream_id: streamId,
      traces: [
        { id: traceId, input: "hi", output: "Thank you kindly.", user_metadata: { lang: "en" } },
        { id: rudeId, input: "hi", output: "go away, rude", user_metadata: { lang: "en" } },
      ],
    });
    expect(written.status, JSON.stringify(written.body)).toBe(200);
    const info = await scoredInfo(projectId, streamId, traceId, "polite");
    expect(info).toMatchObject({ status_type: "success", value: 1, explanation: expect.stringContaining("Courteous."), judge: { model: "gpt-4o-mini", num_input_tokens: 300, num_output_tokens: 30 } });
    expect((info.judge as { cost: number }).cost).toBeGreaterThan(0);
    expect((await scoredInfo(projectId, streamId, rudeId, "polite")).value).toBe(0);
    const mine = calls.filter((c) => c.body.messages.some((m) => m.content.includes("Thank you kindly.")));
    expect(mine).toHaveLength(3);
    expect(mine[0]!.headers.authorization).toBe("Bearer sk-test-secret");
    expect(mine[0]!.body.model).toBe("gpt-4o-mini");
    expect(mine[0]!.body.messages[0]).toMatchObject({ role: "system" });
    expect(mine[0]!.body.messages[0]!.content).toContain("You judge politeness.");
    expect(mine[0]!.body.messages[1]!.content).toBe("Is this polite? Thank you kindly. (lang en)");
    expect(mine[0]!.body.response_format.type).toBe("json_schema");
    expect(Object.keys(mine[0]!.body.response_format.json_schema.schema.properties)).toEqual(["score", "explanation"]);
    // A test on a chosen record calls the judge and stores nothing.
    const tested = await api(`/scorers/${scorerId}/test`, { project_id: projectId, record_id: rudeId });
    expect(tested.body).toMatchObject({ record_id: rudeId, version: 1, result: { status_type: "success", value: 0, explanation: expect.stringContaining("Insulting.") } });
  });

  it("retries a 429 after its Retry-After, and leaves a 400 as an error GET on the scorer reports", async () => {
    const one = await api(`/scorers/${scorerId}/version/llm`, { user_prompt: "{output}", model_name: "gpt-4o-mini", num_judges: 1 });
    expect(one.status).toBe(200);
    failures.push({ status: 429, headers: { "retry-after": "2" } });
    const flaky = crypto.randomUUID();
    expect((await api(`/projects/${projectId}/traces`, { log_stream_id: streamId, traces: [{ id: flaky, input: "hi", output: "flaky but polite" }] })).status).toBe(200);
    expect((await scoredInfo(projectId, streamId, flaky, "polite")).value).toBe(1);
    const attempts = calls.filter((c) => c.body.messages.some((m) => m.content.includes("flaky")));
    expect(attempts).toHaveLength(2);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1_900);

    failures.push({ status: 400 });
    const broken = crypto.randomUUID();
    expect((await api(`/projects/${projectId}/traces`, { log_stream_id: streamId, traces: [{ id: broken, input: "hi", output: "broken" }] })).status).toBe(200);
    const info = await scoredInfo(projectId, streamId, broken, "polite", "error");
    expect(info.message).toContain("answered 400");
    const scorer = await api(`/scorers/${scorerId}`);
    expect(scorer.body.counts).toMatchObject({ success: 3, error: 1, pending: 0 });
    expect(scorer.body.last_error).toMatchObject({ record_id: broken, message: expect.stringContaining("answered 400") });
  });
});
