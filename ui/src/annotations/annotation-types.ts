/** Shapes of the annotation API as the page reads them (contract section 8, docs/annotations.md). */

export type AnnotationType = "like_dislike" | "star" | "score" | "tags" | "choice" | "tree_choice" | "text";

export interface TreeChoiceNode {
  id: string;
  label: string;
  children?: TreeChoiceNode[];
}

export interface TemplateConstraints {
  annotation_type: AnnotationType;
  min?: number;
  max?: number;
  tags?: string[];
  choices?: string[];
  allow_other?: boolean;
  choices_tree?: TreeChoiceNode[];
}

export interface AnnotationTemplate {
  id: string;
  name: string;
  criteria: string | null;
  include_explanation: boolean;
  constraints: TemplateConstraints;
  position: number;
  usage_count?: number;
}

/** boolean (like_dislike), integer (star, score), list of strings (tags), string (the others). */
export type RatingValue = boolean | number | string | string[];

export interface RatingBody {
  rating: { annotation_type: AnnotationType; value: RatingValue };
  explanation?: string | null;
}

export interface UserRating {
  annotation_type: AnnotationType;
  value: RatingValue;
  explanation: string | null;
}

export type Aggregate =
  | { annotation_type: "like_dislike"; like_count: number; dislike_count: number; unrated_count: number; tie_count: number }
  | { annotation_type: "star"; average: number | null; counts: Record<string, number>; unrated_count: number }
  | { annotation_type: "score"; average: number | null; buckets: { min_inclusive: number; max_exclusive: number; count: number }[]; unrated_count: number }
  | { annotation_type: "tags" | "choice" | "tree_choice"; counts: Record<string, number>; unrated_count: number }
  | { annotation_type: "text"; count: number; unrated_count: number };

/** The feedback fields a record carries when read with its ratings. */
export interface RecordFeedback {
  /** template id -> user id -> rating */
  annotations?: Record<string, Record<string, UserRating>>;
  annotation_aggregates?: Record<string, { aggregate: Aggregate }>;
  annotation_agreement?: Record<string, number>;
  annotation_queue_ids?: string[];
}

export interface AnnotationQueue {
  id: string;
  name: string;
  description?: string | null;
  num_log_records: number;
  num_annotators: number;
  num_templates: number;
  num_logs_annotated?: Record<string, number>;
  progress?: Record<string, number>;
  overall_progress?: number;
  templates: AnnotationTemplate[];
}
