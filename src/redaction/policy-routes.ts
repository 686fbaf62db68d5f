/**
 * `GET|PUT /v2/projects/{pid}/redaction` (contract section 14): members read the policy, admins
 * replace it whole; `POST /v2/projects/{pid}/redaction/preview` masks a sample text with a policy
 * (the saved one, or one being edited) exactly as ingestion would, for the explorer's live
 * preview.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { adminOnly } from "../auth/authenticate";
import { database, nowMicros } from "../db/client";
import { adminOnlyResponse, commonErrorResponses, ProjectIdParam, tooLargeResponse } from "../http/common-schemas";
import type { Router } from "../http/create-router";
import { RequestValidationError } from "../http/errors";
import type { ValidationErrorItem } from "../http/validation-errors";
import { ownedProjectOrThrow } from "../projects/run-access";
import { CUSTOM_FLAGS, customPatternFault, MAX_PATTERN_CHARS } from "./custom-patterns";
import { DETECTOR_NAMES } from "./detectors";
import { maskString } from "./mask-values";
import { compilePolicy, DEFAULT_POLICY, REDACTION_FIELDS, type RedactionPolicy } from "./policy";
import { readPolicy, writePolicy } from "./policy-store";

const MAX_CUSTOM_PATTERNS = 50;
const MAX_PREVIEW_CHARS = 100_000;

const CustomPatternSchema = z.object({
  name: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_.-]+$/, "a name is letters, digits, `_`, `.` or `-` (it appears in the placeholder)")
    .openapi({ example: "employee_id" }),
  pattern: z.string().min(1).max(MAX_PATTERN_CHARS).openapi({ description: "ECMAScript syntax; no backreferences or lookaround (linear-time engine)", example: "EMP-\\d{6}" }),
  flags: z
    .string()
    .max(4)
    .regex(new RegExp(`^[${CUSTOM_FLAGS.join("")}]*$`), "flags are any of i, m, s, u")
    .nullable()
    .optional(),
});

export const RedactionPolicySchema = z
  .object({
    enabled: z.boolean(),
    mode: z.enum(["mask", "shadow"]),
    detectors: z.array(z.enum(DETECTOR_NAMES)).max(DETECTOR_NAMES.length * 2),
    custom: z.array(CustomPatternSchema).max(MAX_CUSTOM_PATTERNS),
    fields: z.array(z.enum(REDACTION_FIELDS)).max(REDACTION_FIELDS.length * 2),
  })
  .openapi("RedactionPolicy");

const PolicyBody = RedactionPolicySchema.partial().openapi("RedactionPolicyUpdate");

const getPolicy = createRoute({
  method: "get",
  path: "/projects/{project_id}/redaction",
  tags: ["Redaction"],
  summary: "A project's redaction policy",
  request: { params: ProjectIdParam },
  responses: { 200: { content: { "application/json": { schema: RedactionPolicySchema } }, description: "The policy (the default when none was set)" }, ...commonErrorResponses },
});

const putPolicy = createRoute({
  method: "put",
  path: "/projects/{project_id}/redaction",
  tags: ["Redaction"],
  summary: "Replace a project's redaction policy",
  description:
    "Replaces the policy whole: a key left out takes its default (`enabled: false`, `mode: mask`, every detector, no custom pattern, fields input, output, user_metadata). Applies to records written from then on, within 5 seconds on every instance; records stored before are rewritten by `POST .../redaction/apply`. Admins only.",
  middleware: [adminOnly] as const,
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: PolicyBody } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: RedactionPolicySchema } }, description: "The policy, as stored" },
    ...adminOnlyResponse,
    ...tooLargeResponse,
    ...commonErrorResponses,
  },
});

const PreviewBody = z
  .object({
    text: z.string().max(MAX_PREVIEW_CHARS),
    policy: PolicyBody.optional().openapi({ description: "A policy to try; absent: the project's saved policy" }),
  })
  .openapi("RedactionPreviewRequest");

const preview = createRoute({
  method: "post",
  path: "/projects/{project_id}/redaction/preview",
  tags: ["Redaction"],
  summary: "Mask a sample text with a policy",
  description: "What ingestion would store for this text as `input` (mask mode), whether or not the policy is enabled. Stores nothing.",
  request: { params: ProjectIdParam, body: { content: { "application/json": { schema: PreviewBody } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: z.object({ masked: z.string(), changed: z.boolean() }) } }, description: "The masked text" },
    ...tooLargeResponse,
    ...commonErrorResponses,
  },
});

/** The policy a PUT (or a preview) describes, defaults filled in; a 422 naming each refused custom pattern. */
function normalizedPolicy(body: z.infer<typeof PolicyBody>, loc: (string | number)[]): RedactionPolicy {
  const policy: RedactionPolicy = {
    enabled: body.enabled ?? DEFAULT_POLICY.enabled,
    mode: body.mode ?? DEFAULT_POLICY.mode,
    // Listed in the contract's order, each once: the order breaks ties between matches.
    detectors: body.detectors ? DETECTOR_NAMES.filter((d) => body.detectors!.includes(d)) : [...DEFAULT_POLICY.detectors],
    custom: (body.custom ?? []).map((c) => ({ name: c.name, pattern: c.pattern, flags: c.flags ?? null })),
    fields: body.fields ? REDACTION_FIELDS.filter((f) => body.fields!.includes(f)) : [...DEFAULT_POLICY.fields],
  };
  const faults: ValidationErrorItem[] = [];
  policy.custom.forEach((custom, i) => {
    const fault = customPatternFault(custom);
    if (fault) {
      faults.push({ loc: [...loc, "custom", i, "pattern"], msg: `Value error, ${fault}`, type: "value_error", input: custom.pattern, ctx: { error: fault } });
    }
  });
  if (faults.length > 0) throw new RequestValidationError(faults);
  return policy;
}

export function registerRedactionPolicy(app: Router): void {
  app.openapi(getPolicy, async (c) => {
    const { project_id } = c.req.valid("param");
    await ownedProjectOrThrow(database(c.env.DB), c.get("principal"), project_id);
    return c.json(await readPolicy(c.env.DB, project_id), 200);
  });

  app.openapi(putPolicy, async (c) => {
    const { project_id } = c.req.valid("param");
    const policy = normalizedPolicy(c.req.valid("json"), ["body"]);
    await ownedProjectOrThrow(database(c.env.DB), c.get("principal"), project_id);
    await writePolicy(c.env.DB, project_id, policy, nowMicros());
    return c.json(policy, 200);
  });

  app.openapi(preview, async (c) => {
    const { project_id } = c.req.valid("param");
    const body = c.req.valid("json");
    await ownedProjectOrThrow(database(c.env.DB), c.get("principal"), project_id);
    const policy = body.policy ? normalizedPolicy(body.policy, ["body", "policy"]) : await readPolicy(c.env.DB, project_id);
    const compiled = compilePolicy({ ...policy, enabled: true, mode: "mask", fields: ["input"] });
    const masked = compiled ? maskString(body.text, compiled.matchers) : body.text;
    return c.json({ masked, changed: masked !== body.text }, 200);
  });
}
