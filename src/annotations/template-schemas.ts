/**
 * The wire shapes of annotation templates, as Galileo's server names them
 * (`AnnotationTemplateCreate`, `AnnotationTemplateDB`; contract section 8). `constraints` is
 * discriminated by `annotation_type`, so a wrong type is a 422 `union_tag_invalid` at
 * `["body","constraints","annotation_type"]`, as Pydantic reports it.
 */
import { z } from "@hono/zod-openapi";

/** At most this many choices on one level of a tree_choice template (contract section 8). */
export const MAX_TREE_CHOICES_PER_LEVEL = 50;
/** Depth of a tree_choice tree: bounds the work of validating and walking one. */
export const MAX_TREE_DEPTH = 10;
/** Tags or choices of one template: a bound on what a rating is checked against. */
export const MAX_OPTIONS = 1000;

const OptionText = z.string().min(1).max(255);

const LikeDislikeConstraints = z.object({ annotation_type: z.literal("like_dislike") }).openapi("LikeDislikeConstraints");
const StarConstraints = z.object({ annotation_type: z.literal("star") }).openapi("StarConstraints");
const TextConstraints = z.object({ annotation_type: z.literal("text") }).openapi("TextConstraints");

const ScoreConstraints = z
  .object({
    annotation_type: z.literal("score"),
    min: z.int().min(0),
    max: z.int().min(1),
  })
  .superRefine((value, ctx) => {
    if (value.min >= value.max) {
      ctx.addIssue({
        code: "custom",
        path: ["max"],
        message: "max must be greater than min",
        params: { pydantic: { type: "value_error", msg: `Value error, max (${value.max}) must be greater than min (${value.min})` } },
      });
    }
  })
  .openapi("ScoreConstraints");

const TagsConstraints = z
  .object({
    annotation_type: z.literal("tags"),
    tags: z.array(OptionText).min(1).max(MAX_OPTIONS),
    allow_other: z.boolean().default(false),
  })
  .openapi("TagsConstraints");

const ChoiceConstraints = z
  .object({
    annotation_type: z.literal("choice"),
    choices: z.array(OptionText).min(1).max(MAX_OPTIONS),
    allow_other: z.boolean().default(false),
  })
  .openapi("ChoiceConstraints");

export interface TreeChoiceNode {
  id: string;
  label: string;
  children: TreeChoiceNode[];
}

/** One level of a choice tree; built eagerly to MAX_TREE_DEPTH levels (no recursive schema). */
function treeLevel(depth: number): z.ZodType<TreeChoiceNode[]> {
  const node = z.object({
    id: OptionText,
    label: OptionText,
    children: depth >= MAX_TREE_DEPTH ? z.array(z.unknown()).max(0).default([]) : treeLevel(depth + 1).default([]),
  });
  return z.array(node).max(MAX_TREE_CHOICES_PER_LEVEL) as unknown as z.ZodType<TreeChoiceNode[]>;
}

const TreeChoiceConstraints = z
  .object({
    annotation_type: z.literal("tree_choice"),
    choices_tree: treeLevel(1).refine((level) => level.length > 0, { message: "the tree needs at least one choice" }),
  })
  .superRefine((value, ctx) => {
    const seen = new Set<string>();
    const walk = (nodes: readonly TreeChoiceNode[]) => {
      for (const node of nodes) {
        if (seen.has(node.id)) {
          ctx.addIssue({
            code: "custom",
            path: ["choices_tree"],
            message: "duplicate node id",
            params: { pydantic: { type: "value_error", msg: `Value error, node id '${node.id}' appears twice in the tree` } },
          });
        }
        seen.add(node.id);
        walk(node.children);
      }
    };
    walk(value.choices_tree);
  })
  .openapi("TreeChoiceConstraints");

export const AnnotationConstraints = z
  .discriminatedUnion("annotation_type", [
    LikeDislikeConstraints,
    StarConstraints,
    ScoreConstraints,
    TagsConstraints,
    ChoiceConstraints,
    TreeChoiceConstraints,
    TextConstraints,
  ])
  .openapi("AnnotationConstraints");

export type AnnotationConstraintsValue = z.infer<typeof AnnotationConstraints>;

export const AnnotationTemplateCreate = z
  .object({
    name: z.string().min(1).max(255),
    include_explanation: z.boolean().default(false),
    criteria: z.string().max(10_000).nullable().default(null),
    constraints: AnnotationConstraints,
  })
  .openapi("AnnotationTemplateCreate");

export const AnnotationTemplateUpdate = z
  .object({
    name: z.string().min(1).max(255).optional(),
    criteria: z.string().max(10_000).nullable().optional(),
  })
  .openapi("AnnotationTemplateUpdate");

export const AnnotationTemplateReorder = z
  .object({ ordering: z.array(z.guid().transform((s) => s.toLowerCase())).max(1000) })
  .openapi("AnnotationTemplateReorder");

export const AnnotationTemplateDB = z
  .object({
    id: z.string(),
    name: z.string(),
    include_explanation: z.boolean(),
    criteria: z.string().nullable(),
    constraints: AnnotationConstraints,
    position: z.number().int(),
    usage_count: z.number().int().openapi({ description: "Ratings made with this template." }),
    created_at: z.string(),
    created_by: z.string().nullable(),
  })
  .openapi("AnnotationTemplateDB");

export type AnnotationTemplate = z.infer<typeof AnnotationTemplateDB>;
