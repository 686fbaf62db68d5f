/**
 * Records the OTLP payloads the unit tests decode (test/fixtures/otlp/*.json): the example
 * traces of test/node/otel-example-traces.ts, made by the real OpenTelemetry JS SDK and sent by
 * its real exporters (protobuf and JSON) to a loopback server that keeps the bodies.
 *
 *   npx tsx scripts/record-otlp-fixtures.ts     # rewrites test/fixtures/otlp/
 */
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { OTLPTraceExporter as HttpJsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { genAiAgentTrace, openInferenceTrace, openLlmetryTrace } from "../test/node/otel-example-traces";

const OUT = path.resolve(import.meta.dirname, "../test/fixtures/otlp");
const PORT = Number(process.env.PORT ?? 8831);

const bodies: { contentType: string; body: Buffer }[] = [];
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    bodies.push({ contentType: String(req.headers["content-type"]), body: Buffer.concat(chunks) });
    res.writeHead(200, { "content-type": String(req.headers["content-type"]) }).end();
  });
});
await new Promise<void>((resolve) => server.listen(PORT, "127.0.0.1", resolve));

const examples = [
  { name: "genai-agent", encoding: "protobuf", make: genAiAgentTrace, description: "GenAI semantic conventions: invoke_agent root, two chat spans and an execute_tool span" },
  { name: "openinference-rag", encoding: "json", make: openInferenceTrace, description: "OpenInference: CHAIN root, RETRIEVER, LLM and a failing TOOL" },
  { name: "openllmetry-chat", encoding: "protobuf", make: openLlmetryTrace, description: "OpenLLMetry: a traceloop workflow around one chat span (gen_ai.prompt.N / gen_ai.completion.N)" },
] as const;

try {
  for (const example of examples) {
    bodies.length = 0;
    const url = `http://127.0.0.1:${PORT}/v1/traces`;
    const exporter = example.encoding === "protobuf" ? new ProtoExporter({ url }) : new HttpJsonExporter({ url });
    const provider = new TracerProvider({
      resource: resourceFromAttributes({ "service.name": "fixture-app", "deployment.environment.name": "test" }),
      spanProcessors: [new BatchSpanProcessor({ exporter })],
    });
    const traceId = example.make(provider.getTracer("fixture-recorder", "1.0.0"), { tag: "fixture" });
    await provider.forceFlush();
    await provider.shutdown();
    if (bodies.length !== 1) throw new Error(`${example.name}: expected one export request, got ${bodies.length}`);
    const { contentType, body } = bodies[0]!;
    const fixture = {
      description: example.description,
      trace_id: traceId,
      content_type: contentType,
      ...(example.encoding === "json" ? { body: body.toString("utf8") } : { body_base64: body.toString("base64") }),
    };
    writeFileSync(path.join(OUT, `${example.name}.json`), `${JSON.stringify(fixture, null, 2)}\n`);
    console.log(`${example.name}: ${body.length} bytes (${contentType})`);
  }
} finally {
  server.close();
}
