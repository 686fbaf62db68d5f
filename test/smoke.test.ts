import { describe, expect, it } from "vitest";
import { call } from "./support/client";
import { createTenant } from "./support/tenants";

describe("smoke", () => {
  it("creates a project and ingests a trace", async () => {
    const t = await createTenant();
    const p = await call("/v2/projects", { as: t, body: { name: "p1", type: "gen_ai" } });
    expect(p.status).toBe(200);
    const ls = await call(`/v2/projects/${p.body.id}/log_streams`, { as: t, body: { name: "default" } });
    expect(ls.status).toBe(200);
    const ing = await call(`/v2/projects/${p.body.id}/traces`, {
      as: t,
      body: { log_stream_id: ls.body.id, traces: [{ name: "t", input: "hi", output: "yo", user_metadata: { a: "1" }, metrics: { toxicity: 0.2 }, tags: ["x"], spans: [{ type: "llm", name: "l", input: [{ role: "user", content: "hi" }], output: { role: "assistant", content: "yo" }, model: "gpt" }] }] },
    });
    expect(ing.status, JSON.stringify(ing.body)).toBe(200);
    expect(ing.body.records_count).toBe(2);
    const cols = await call(`/v2/projects/${p.body.id}/spans/available_columns`, { as: t, body: { log_stream_id: ls.body.id } });
    expect(cols.status, JSON.stringify(cols.body)).toBe(200);
    const doc = await call("/openapi.json");
    expect(doc.status).toBe(200);
  });
});
