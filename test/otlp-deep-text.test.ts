/**
 * Text that looks like deeply nested JSON (6,000 levels of `[`, or of `{"a":`) is kept as text
 * wherever it arrives (contract section 12; issue 30 saw it stored as an empty input): as the
 * whole `gen_ai.input.messages` / `gen_ai.output.messages` attribute, as a message's content, as
 * a tool call's arguments; over protobuf and OTLP/JSON alike.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { exportRequest, jsonBody, otlpSpan, postOtlp, protobufBody, randomHex } from "./support/otlp-requests";
import { createTenant, type Tenant } from "./support/tenants";

let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant("admin");
});

const DEEP = { brackets: "[".repeat(6000), objects: '{"a":'.repeat(6000) };

async function ingestAndRead(attributes: Record<string, string>, encoding: "protobuf" | "json") {
  const project = `deep-${randomHex(4)}`;
  const request = exportRequest([otlpSpan({ trace: randomHex(16), span: randomHex(8), name: "chat", attributes: { "gen_ai.operation.name": "chat", ...attributes } })]);
  const response =
    encoding === "protobuf"
      ? await postOtlp(protobufBody(request), { headers: { "Service-API-Key": tenant.apiKey, project } })
      : await postOtlp(jsonBody(request), { contentType: "application/json", headers: { "Service-API-Key": tenant.apiKey, project } });
  expect(response.status, await response.clone().text()).toBe(200);
  const projectId = (await call(`/v2/projects?project_name=${encodeURIComponent(project)}`, { as: tenant })).body[0].id;
  const runId = (await call(`/v2/projects/${projectId}/log_streams?name=default`, { as: tenant })).body[0].id;
  const spans = await call(`/v2/projects/${projectId}/spans/partial_search`, { as: tenant, body: { log_stream_id: runId, filters: [{ type: "text", column_id: "type", operator: "eq", value: "llm" }] } });
  expect(spans.status, JSON.stringify(spans.body)).toBe(200);
  expect(spans.body.records).toHaveLength(1);
  return spans.body.records[0] as { input: unknown; output: unknown };
}

/** Whether `text` is somewhere in the record's input or output, as a string. */
const holds = (value: unknown, text: string) => JSON.stringify(value).includes(JSON.stringify(text).slice(1, -1));

describe("deeply nested JSON text in gen_ai messages is kept as text", () => {
  for (const encoding of ["protobuf", "json"] as const) {
    for (const [shape, deep] of Object.entries(DEEP)) {
      it(`${encoding}, ${shape}: as the whole gen_ai.input.messages and gen_ai.output.messages`, async () => {
        const record = await ingestAndRead({ "gen_ai.input.messages": deep, "gen_ai.output.messages": deep }, encoding);
        expect(record.input).toEqual([{ role: "user", content: deep }]);
        expect(record.output).toMatchObject({ role: "assistant", content: deep });
      });

      it(`${encoding}, ${shape}: as a message's content and a tool call's arguments`, async () => {
        const input = JSON.stringify([{ role: "user", parts: [{ type: "text", content: deep }] }]);
        const output = JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: "calling" }, { type: "tool_call", id: "c1", name: "f", arguments: deep }], finish_reason: "tool_call" }]);
        const record = await ingestAndRead({ "gen_ai.input.messages": input, "gen_ai.output.messages": output }, encoding);
        expect(holds(record.input, deep), JSON.stringify(record.input).slice(0, 200)).toBe(true);
        expect(holds(record.output, deep), JSON.stringify(record.output).slice(0, 200)).toBe(true);
      });

      it(`${encoding}, ${shape}: as OpenAI-style content and tool_calls arguments`, async () => {
        const input = JSON.stringify([{ role: "user", content: deep }]);
        const output = JSON.stringify([{ role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: deep } }] }]);
        const record = await ingestAndRead({ "gen_ai.input.messages": input, "gen_ai.output.messages": output }, encoding);
        expect(holds(record.input, deep)).toBe(true);
        expect(holds(record.output, deep)).toBe(true);
      });
    }
  }
});
