/**
 * Property test: random datasets ingested through the real routes, random filter trees, sorts
 * and page sizes in both request shapes; every answer is compared with the independent evaluator
 * (test/search-reference-evaluator.ts): the ids and their order, every page boundary and
 * pagination field, and that walking all pages returns each match exactly once.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/client";
import { addUser, createTenant, type Tenant } from "./support/tenants";
import { catchUpTextIndexesEverywhere } from "./support/text-index";
import { createRun, datasetArbitrary, ingestDataset, isoAt, POOLS } from "./search-dataset";
import { columnAppliesTo, evaluate, type Family, type RefRecord } from "./search-reference-evaluator";

const ROUTE: Record<Family, string> = { session: "sessions", trace: "traces", span: "spans" };

/** A value drawn now, resolved against the dataset when the request is built (ids need it). */
type Deferred<T> = (records: readonly RefRecord[]) => T;

const pick = <T>(values: readonly T[]) => fc.constantFrom(...values);

function idOf(records: readonly RefRecord[], n: number, field: "id" | "session_id" | "trace_id" | "parent_id"): string {
  const values = records.map((r) => r[field]).filter((v): v is string => v !== null);
  return values.length > 0 ? values[n % values.length]! : crypto.randomUUID();
}

/**
 * A substring of the value, of any length from one character (by code point): needles of three
 * characters and more on name, input and output are answered through the text index
 * (src/search/text-driver.ts), shorter ones by the scan, and the answers must not differ.
 */
function substringOf(value: string, start: number, length: number): string {
  const chars = Array.from(value);
  if (chars.length === 0) return value;
  const from = start % chars.length;
  return chars.slice(from, from + 1 + (length % (chars.length - from))).join("");
}

const textColumns: Record<string, readonly string[]> = {
  name: POOLS.names,
  input: ["hello", "needle", "NEEDLE", "ünïcode", "%", "_", "hello world", "role", "école", "ÉCOLE", "n haystack", "\"content\":", "\u212Aelvin", "kelvin"],
  output: ["hello", "needle", "content", "Hello World", "ÜNÏCODE", "world\""],
  external_id: POOLS.externalIds,
  error_message: POOLS.errors,
  dataset_input: POOLS.datasetInputs,
  model: POOLS.models,
  type: ["llm", "tool", "retriever", "control", "workflow", "agent"],
  agent_type: POOLS.agentTypes,
  tool_call_id: POOLS.toolCallIds,
  agent_name: POOLS.agentNames,
  "user_metadata.env": POOLS.env,
  "user_metadata.customer": POOLS.customer,
  "dataset_metadata.split": POOLS.splits,
};

const numberColumns: Record<string, readonly number[]> = {
  "metrics/toxicity": POOLS.toxicity,
  "metrics/duration_ns": POOLS.duration,
  status_code: POOLS.statusCodes,
  step_number: POOLS.steps,
  temperature: POOLS.temperatures,
  control_id: POOLS.controlIds,
};

const idColumns = ["id", "session_id", "trace_id", "parent_id"] as const;

function leafArb(family: Family): fc.Arbitrary<Deferred<Record<string, unknown>>> {
  const applies = (c: string) => columnAppliesTo(c, family);
  const explicitType = fc.boolean();
  const named = (column: string, type: string) =>
    fc.tuple(explicitType, fc.boolean()).map(([withType, seedStyle]) => ({
      ...(withType ? { type } : {}),
      ...(seedStyle ? { name: column } : { column_id: column }),
    }));
  const leaves: fc.Arbitrary<Deferred<Record<string, unknown>>>[] = [];

  const texts = Object.keys(textColumns).filter(applies);
  leaves.push(
    pick(texts).chain((column) =>
      fc
        .tuple(named(column, "text"), pick(["eq", "ne", "contains", "one_of", "not_in"]), fc.subarray([...textColumns[column]!], { minLength: 1 }), fc.boolean(), fc.nat(), fc.nat())
        .map(([head, operator, values, cs, start, length]) => () => ({
          ...head,
          operator,
          value: operator === "one_of" || operator === "not_in" ? values : operator === "contains" ? substringOf(values[0]!, start, length) : values[0]!,
          case_sensitive: cs,
        })),
    ),
  );
  const numbers = Object.keys(numberColumns).filter(applies);
  leaves.push(
    pick(numbers).chain((column) =>
      fc
        .tuple(named(column, "number"), pick(["eq", "ne", "gt", "gte", "lt", "lte", "between"]), pick(numberColumns[column]!), pick(numberColumns[column]!))
        .map(([head, operator, a, b]) => () => ({ ...head, operator, value: operator === "between" ? [Math.min(a, b), Math.max(a, b)] : a })),
    ),
  );
  const dates = ["created_at", "updated_at"].filter(applies);
  leaves.push(
    fc
      .tuple(pick(dates), pick(["eq", "ne", "gt", "gte", "lt", "lte"]), fc.integer({ min: 0, max: 12 }), pick([0, 500, 999999]))
      .chain(([column, operator, second, micros]) => named(column, "date").map((head) => () => ({ ...head, operator, value: isoAt(second, micros) }))),
  );
  const booleans = ["has_children", "is_complete"].filter(applies);
  if (booleans.length > 0) {
    leaves.push(
      fc
        .tuple(pick(booleans), fc.option(pick(["eq", "ne"]), { nil: undefined }), fc.boolean())
        .chain(([column, operator, value]) => named(column, "boolean").map((head) => () => ({ ...head, ...(operator ? { operator } : {}), value }))),
    );
  }
  const ids = idColumns.filter(applies);
  leaves.push(
    fc
      .tuple(pick(ids), fc.option(pick(["eq", "ne", "one_of", "not_in", "contains"]), { nil: undefined }), fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), fc.boolean())
      .chain(([column, operator, picks, upper]) =>
        named(column, "id").map((head) => (records: readonly RefRecord[]) => {
          const values = picks.map((n) => idOf(records, n, column));
          const value =
            operator === "one_of" || operator === "not_in" ? values : operator === "contains" ? values[0]!.slice(9, 13) : values[0]!;
          return { ...head, ...(operator ? { operator } : {}), value: upper && typeof value === "string" ? value.toUpperCase() : value };
        }),
      ),
  );
  if (applies("tags")) {
    leaves.push(
      fc
        .tuple(named("tags", "collection"), pick(["eq", "contains", "one_of", "not_in"]), fc.subarray(POOLS.tags), fc.boolean())
        .map(([head, operator, values, cs]) => () => ({
          ...head,
          operator,
          value: operator === "contains" ? (values[0] ?? "red") : values,
          case_sensitive: cs,
        })),
    );
  }
  if (family !== "session") leaves.push(fc.constant(() => ({ type: "fully_annotated", user_ids: [] })));
  // Annotation leaves (placeholders LIKE / SCORE become the run's template ids in checkWalk).
  leaves.push(
    fc.tuple(pick(["eq", "ne"]), fc.boolean()).map(([operator, value]) => () => ({ type: "boolean", column_id: "annotations/LIKE", operator, value })),
    fc
      .tuple(pick(["eq", "ne", "gt", "gte", "lt", "lte", "between"]), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 2 }))
      .map(([operator, value, width]) => () => ({ type: "number", column_id: "annotations/SCORE", operator, value: operator === "between" ? [value, value + width] : value })),
    fc.constant(() => ({ type: "fully_annotated", user_ids: ["ANNOTATOR"] })),
  );
  return fc.oneof(...leaves);
}

function treeArb(family: Family): fc.Arbitrary<Deferred<unknown>> {
  const { node } = fc.letrec<{ node: Deferred<unknown> }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      leafArb(family),
      leafArb(family).map((leaf) => (records: readonly RefRecord[]) => ({ filter: leaf(records) })),
      fc.array(tie("node"), { maxLength: 3 }).map((children) => (records: readonly RefRecord[]) => ({ and: children.map((c) => c(records)) })),
      fc.array(tie("node"), { maxLength: 3 }).map((children) => (records: readonly RefRecord[]) => ({ or: children.map((c) => c(records)) })),
      tie("node").map((child) => (records: readonly RefRecord[]) => ({ not: child(records) })),
    ),
  }));
  return node;
}

function sortArb(family: Family) {
  const columns = ["created_at", "name", "id", "input", "status_code", "updated_at", "has_children", "external_id", "type", "model", "temperature", "step_number", "metrics/toxicity", "metrics/duration_ns", "user_metadata.env", "dataset_metadata.split", "annotations/LIKE", "annotations/SCORE"].filter((c) =>
    columnAppliesTo(c, family),
  );
  return fc.option(
    fc.record({ column: pick(columns), ascending: fc.option(fc.boolean(), { nil: undefined }), seedStyle: fc.boolean() }).map(({ column, ascending, seedStyle }) => ({
      ...(seedStyle ? { name: column } : { column_id: column }),
      ...(ascending === undefined ? {} : { ascending }),
      sort_type: "column",
    })),
    { nil: undefined },
  );
}

function requestArb(family: Family) {
  return fc.record({
    filters: fc.oneof(fc.constant([]), fc.array(treeArb(family), { maxLength: 2 })),
    tree: fc.option(treeArb(family), { nil: undefined, freq: 2 }),
    sort: sortArb(family),
    pageSize: fc.integer({ min: 1, max: 9 }),
    seedStyle: fc.boolean(),
  });
}

type Request = { filters: readonly Deferred<unknown>[]; tree?: Deferred<unknown>; sort?: Record<string, unknown>; pageSize: number; seedStyle: boolean };

/** The run's annotation templates and the user whose ratings fully_annotated leaves name. */
interface Annotations {
  like: string;
  score: string;
  annotator: string;
}

async function checkWalk(tenant: Tenant, projectId: string, runId: string, records: readonly RefRecord[], family: Family, request: Request, annotations: Annotations) {
  const filters = request.filters.map((f: Deferred<unknown>) => f(records));
  const filterTree = request.tree ? request.tree(records) : undefined;
  const written = { log_stream_id: runId, filters, ...(filterTree ? { filter_tree: filterTree } : {}), ...(request.sort ? { sort: request.sort } : {}) };
  const shape = JSON.parse(
    JSON.stringify(written).replaceAll("annotations/LIKE", `annotations/${annotations.like}`).replaceAll("annotations/SCORE", `annotations/${annotations.score}`).replaceAll('"ANNOTATOR"', JSON.stringify(annotations.annotator)),
  );
  const templates = [
    { id: annotations.like, type: "like_dislike" as const },
    { id: annotations.score, type: "score" as const },
  ];
  const expected = evaluate(records, family, shape as never, templates).map((r) => r.id);
  const seen: string[] = [];
  for (let offset = 0; ; ) {
    const paging = request.seedStyle ? { pagination: { limit: request.pageSize, starting_token: offset } } : { limit: request.pageSize, starting_token: offset };
    const res = await call(`/v2/projects/${projectId}/${ROUTE[family]}/partial_search`, {
      as: tenant,
      body: { ...shape, ...paging, select_columns: { column_ids: ["name"] } },
    });
    const context = `${JSON.stringify({ ...shape, ...paging })}\nexpected ${JSON.stringify(expected)}`;
    expect(res.status, `${context}\n${JSON.stringify(res.body)}`).toBe(200);
    const ids = res.body.records.map((r: { id: string }) => r.id);
    const want = expected.slice(offset, offset + request.pageSize);
    expect(ids, context).toEqual(want);
    expect(res.body.num_rows).toBe(want.length);
    expect(res.body.num_records).toBe(want.length);
    expect(res.body.starting_token).toBe(offset);
    expect(res.body.limit).toBe(request.pageSize);
    const more = offset + request.pageSize < expected.length;
    expect(res.body.paginated, context).toBe(more);
    expect(res.body.next_starting_token).toBe(more ? offset + want.length : null);
    expect(res.body.last_row_id).toBe(want.length > 0 ? want[want.length - 1] : null);
    seen.push(...ids);
    if (!more) break;
    offset = res.body.next_starting_token;
  }
  expect(seen).toEqual(expected);
  expect(new Set(seen).size).toBe(seen.length);
}

describe("search: answers equal the reference evaluator", () => {
  let tenant: Tenant;
  let colleague: Tenant;
  beforeAll(async () => {
    tenant = await createTenant();
    colleague = await addUser(tenant, "member");
  });

  /**
   * Two templates (like_dislike, score 1-5) and ratings by two users on records picked by the
   * plan (any kind); the ratings are put on the reference records too.
   */
  async function annotate(projectId: string, records: RefRecord[], plan: readonly [number, number, number][]): Promise<Annotations> {
    const template = async (constraints: Record<string, unknown>) =>
      (await call(`/v2/projects/${projectId}/annotation/templates`, { as: tenant, body: { name: String(constraints.annotation_type), constraints } })).body.id as string;
    const like = await template({ annotation_type: "like_dislike" });
    const score = await template({ annotation_type: "score", min: 1, max: 5 });
    for (const [n, code, value] of plan) {
      const record = records[n % records.length]!;
      const who = code % 2 === 0 ? tenant : colleague;
      const [id, rating] = code < 2 ? [like, { annotation_type: "like_dislike", value: value % 2 === 0 }] : [score, { annotation_type: "score", value: 1 + (value % 5) }];
      const answer = await call(`/v2/projects/${projectId}/annotation/templates/${id}/records/${record.id}/rating`, { as: who, method: "PUT", body: { rating } });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      record.ratings = [...(record.ratings ?? []).filter((r) => !(r.template === id && r.annotator === who.userId)), { template: id, annotator: who.userId, value: rating.value }];
    }
    return { like, score, annotator: tenant.userId };
  }

  it("for random datasets, filter trees, sorts and page sizes", { timeout: 150_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        datasetArbitrary,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 3 }), fc.nat()), { maxLength: 12 }),
        fc.array(
          pick(["span", "span", "trace", "session"] as Family[]).chain((family) => requestArb(family).map((request) => [family, request] as const)),
          { minLength: 16, maxLength: 16 },
        ),
        async (dataset, ratingPlan, plan) => {
          const { projectId, runId } = await createRun(tenant);
          const records = await ingestDataset(tenant, { projectId, runId }, dataset);
          const annotations = await annotate(projectId, records as RefRecord[], ratingPlan);
          // Half the requests right after the ingest (its records not indexed yet: the text index
          // reads them as the unindexed tail), half once the cron's catch-up has indexed them.
          for (const [family, request] of plan.slice(0, 8)) await checkWalk(tenant, projectId, runId, records, family, request, annotations);
          await catchUpTextIndexesEverywhere();
          for (const [family, request] of plan.slice(8)) await checkWalk(tenant, projectId, runId, records, family, request, annotations);
        },
      ),
      // Shrinking re-ingests a dataset per attempt: bound it so a failure is reported in time.
      { numRuns: 15, interruptAfterTimeLimit: 60_000, markInterruptAsFailure: true },
    );
  });
});
