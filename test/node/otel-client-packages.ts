/**
 * Spans recorded by the real client packages our users instrument with, not attribute sets written
 * from their conventions: the Vercel AI SDK (`ai` with `@ai-sdk/otel`), OpenInference's OpenAI
 * instrumentation (`@arizeai/openinference-instrumentation-openai` around the real `openai`
 * client) and OpenLLMetry (`@traceloop/node-server-sdk`). Each package runs as its README says;
 * only the model behind it is replaced (a mock language model, a `fetch` that answers with a
 * recorded chat completion), since there is no network to a provider here.
 */
import { OpenAIInstrumentation } from "@arizeai/openinference-instrumentation-openai";
import { OpenTelemetry } from "@ai-sdk/otel";
import type { Tracer, TracerProvider } from "@opentelemetry/api";
import * as traceloop from "@traceloop/node-server-sdk";
import { simulateReadableStream, stepCountIs, streamText, tool } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import OpenAI from "openai";
import { z } from "zod";

/** The stream parts a language model yields, as the AI SDK's mock model types them. */
type ModelStreamResult = Awaited<ReturnType<Extract<NonNullable<NonNullable<ConstructorParameters<typeof MockLanguageModelV4>[0]>["doStream"]>, (...args: never[]) => unknown>>>;
type ModelStreamPart = ModelStreamResult["stream"] extends ReadableStream<infer Part> ? Part : never;

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

/**
 * An AI SDK agent: `streamText` with a `weather` tool over two steps (a tool call, then the
 * answer), traced by `@ai-sdk/otel`. The model streams after a 25 ms delay, so the chat spans carry
 * a real time to first chunk. Returns the answer text.
 */
export async function aiSdkWeatherAgent(tracer: Tracer, functionId: string): Promise<string> {
  let step = 0;
  const model = new MockLanguageModelV4({
    provider: "openai.chat",
    modelId: "gpt-4o-mini",
    doStream: async () => {
      step += 1;
      const chunks: ModelStreamPart[] =
        step === 1
          ? [
              { type: "stream-start", warnings: [] },
              { type: "tool-call", toolCallId: "call_weather_1", toolName: "weather", input: JSON.stringify({ city: "Paris" }) },
              { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage: usage(30, 8) },
            ]
          : [
              { type: "stream-start", warnings: [] },
              { type: "text-start", id: "answer" },
              { type: "text-delta", id: "answer", delta: "Rainy in " },
              { type: "text-delta", id: "answer", delta: "Paris." },
              { type: "text-end", id: "answer" },
              { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage: usage(52, 5) },
            ];
      return { stream: simulateReadableStream({ chunks, initialDelayInMs: 25, chunkDelayInMs: 2 }) };
    },
  });
  const result = streamText({
    model,
    prompt: "What is the weather in Paris?",
    stopWhen: stepCountIs(3),
    tools: {
      weather: tool({
        description: "Today's weather in a city",
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => ({ city, forecast: "rain", celsius: 14 }),
      }),
    },
    telemetry: { isEnabled: true, functionId, integrations: [new OpenTelemetry({ tracer })] },
  });
  return await result.text;
}

/** A chat completion as OpenAI answers it, cut short by `max_tokens` (finish_reason "length"). */
const RECORDED_COMPLETION = {
  id: "chatcmpl-recorded-1",
  object: "chat.completion",
  created: 1764000000,
  model: "gpt-4o-mini-2024-07-18",
  choices: [{ index: 0, finish_reason: "length", message: { role: "assistant", content: "It is rainy and", refusal: null } }],
  usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 },
};

/**
 * One `openai` chat completion through OpenInference's instrumentation, instrumented manually as
 * its README says for ESM. The client's `fetch` answers with the recorded completion.
 */
export async function openInferenceChatCompletion(tracerProvider: TracerProvider, question: string): Promise<void> {
  const instrumentation = new OpenAIInstrumentation({ tracerProvider });
  instrumentation.manuallyInstrument(OpenAI);
  try {
    const client = new OpenAI({
      apiKey: "sk-test",
      baseURL: "http://127.0.0.1:9/v1",
      fetch: async () => new Response(JSON.stringify(RECORDED_COMPLETION), { headers: { "content-type": "application/json" } }),
    });
    await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: question }], max_tokens: 4 });
  } finally {
    instrumentation.disable();
  }
}

/**
 * An OpenLLMetry workflow calling a tool, through the Traceloop SDK's own OTLP exporter pointed at
 * the service (`baseUrl` + `/v1/traces`). `headers` replaces the SDK's default
 * `Authorization: Bearer <apiKey>` header, so the API key goes in it too, as Traceloop's
 * documentation says for other backends. The SDK installs a process-wide tracer provider, so
 * this runs once per process.
 */
export async function openLlmetryToolCall(options: { baseUrl: string; apiKey: string; headers: Record<string, string>; workflow: string }): Promise<unknown> {
  traceloop.initialize({
    appName: "openllmetry-e2e",
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    headers: { Authorization: `Bearer ${options.apiKey}`, ...options.headers },
    disableBatch: true,
    instrumentModules: {},
    silenceInitializationMessage: true,
  });
  const answer = await traceloop.withWorkflow({ name: options.workflow }, async () =>
    traceloop.withTool({ name: "lookup_order" }, async (args: { order: string }) => ({ order: args.order, status: "shipped" }), { order: "A-17" }),
  );
  await traceloop.forceFlush();
  return answer;
}
