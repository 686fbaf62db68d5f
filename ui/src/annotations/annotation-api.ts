/** The annotation routes the page uses (contract section 8): templates, ratings, queues. */
import { api } from "../api/client";
import { getCurrentUser } from "../api/endpoints";
import type { ApiRecord, CurrentUser, Family } from "../api/types";
import type { AnnotationQueue, AnnotationTemplate, RatingBody, RatingValue, TemplateConstraints } from "./annotation-types";

const enc = encodeURIComponent;

export const listTemplates = (projectId: string) => api<AnnotationTemplate[]>("GET", `/v2/projects/${enc(projectId)}/annotation/templates`);

export function ratingBody(constraints: TemplateConstraints, value: RatingValue, explanation: string | null): RatingBody {
  return { rating: { annotation_type: constraints.annotation_type, value }, ...(explanation ? { explanation } : {}) };
}

const recordRatingPath = (projectId: string, templateId: string, recordId: string) =>
  `/v2/projects/${enc(projectId)}/annotation/templates/${enc(templateId)}/records/${enc(recordId)}/rating`;

export const putRating = (projectId: string, templateId: string, recordId: string, body: RatingBody) => api<unknown>("PUT", recordRatingPath(projectId, templateId, recordId), body);
export const deleteRating = (projectId: string, templateId: string, recordId: string) => api<unknown>("DELETE", recordRatingPath(projectId, templateId, recordId));

/** The signed-in user, asked once per page load: ratings are keyed by user id. */
let me: Promise<CurrentUser> | null = null;
export function currentUser(): Promise<CurrentUser> {
  me ??= getCurrentUser().catch((error: unknown) => {
    me = null;
    throw error;
  });
  return me;
}

/** A record with its feedback fields (the record lookups always carry them). */
export const getRatedRecord = (projectId: string, family: Family, id: string) => api<ApiRecord>("GET", `/v2/projects/${enc(projectId)}/${family}/${enc(id)}`);

// Queues (organization scope).
const queuePath = (queueId: string) => `/v2/annotation_queues/${enc(queueId)}`;

export const getQueue = (queueId: string) => api<AnnotationQueue>("GET", queuePath(queueId));

export function queryQueues(offset: number, limit: number) {
  return api<{ annotation_queues: AnnotationQueue[]; next_starting_token: number | null; paginated: boolean }>("POST", "/v2/annotation_queues/query", {
    starting_token: offset,
    limit,
  });
}

/** One record of the queue, in the queue's order (as added), with its queue-scoped feedback. */
export function queueRecordAt(queueId: string, index: number) {
  return api<{ records: ApiRecord[]; paginated: boolean }>("POST", `${queuePath(queueId)}/partial_search`, {
    pagination: { starting_token: index, limit: 1 },
    select_columns: { include_all_feedback: true },
  });
}

const queueRatingPath = (queueId: string, recordId: string, templateId: string) =>
  `${queuePath(queueId)}/records/${enc(recordId)}/rating?annotation_template_id=${enc(templateId)}`;

export const putQueueRating = (queueId: string, recordId: string, templateId: string, body: RatingBody) => api<unknown>("PUT", queueRatingPath(queueId, recordId, templateId), body);
export const deleteQueueRating = (queueId: string, recordId: string, templateId: string) => api<unknown>("DELETE", queueRatingPath(queueId, recordId, templateId));
