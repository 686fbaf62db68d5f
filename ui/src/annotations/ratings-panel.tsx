/**
 * Ratings of the open trace, span or session with the project's annotation templates: the
 * caller's own (rate, change, remove), everyone's, and the aggregate and agreement of each
 * template. The record is read again after every change, so what is shown is the service's.
 */
import { useMemo } from "preact/hooks";
import type { ApiRecord, Family } from "../api/types";
import { ErrorNotice } from "../views/error-notice";
import { useApi } from "../views/use-api";
import { aggregateText, treeLabels, valueText } from "./aggregate-text";
import { currentUser, deleteRating, getRatedRecord, listTemplates, putRating, ratingBody } from "./annotation-api";
import type { AnnotationTemplate, RecordFeedback, UserRating } from "./annotation-types";
import { RatingForm } from "./rating-input";
import "./annotations.css";

interface Props {
  projectId: string;
  family: Family;
  recordId: string;
}

const short = (id: string) => id.slice(0, 8);

async function load(projectId: string, family: Family, recordId: string) {
  const [templates, record, me] = await Promise.all([listTemplates(projectId), getRatedRecord(projectId, family, recordId), currentUser()]);
  return { templates, record: record as ApiRecord & RecordFeedback, me };
}

/** One template's block: the caller's form, then the aggregate, agreement and everyone's ratings. */
export function TemplateRatings({
  template,
  feedback,
  meId,
  save,
  remove,
}: {
  template: AnnotationTemplate;
  feedback: RecordFeedback;
  meId: string;
  save: (value: UserRating["value"], explanation: string | null) => Promise<unknown>;
  remove: () => Promise<unknown>;
}) {
  const ratings = Object.entries(feedback.annotations?.[template.id] ?? {});
  const aggregate = feedback.annotation_aggregates?.[template.id]?.aggregate;
  const agreement = feedback.annotation_agreement?.[template.id];
  const labels = useMemo(() => (template.constraints.annotation_type === "tree_choice" ? treeLabels(template.constraints.choices_tree) : undefined), [template]);
  const type = template.constraints.annotation_type;
  return (
    <section class="template-ratings" data-testid="template-ratings" data-template={template.id}>
      <header>
        <strong>{template.name}</strong> <span class="muted small">{type.replace("_", " ")}</span>
        {template.criteria ? <p class="muted small criteria">{template.criteria}</p> : null}
      </header>
      <RatingForm template={template} saved={feedback.annotations?.[template.id]?.[meId]} save={save} remove={remove} />
      <p class="aggregate small" data-testid="aggregate">
        {aggregate ? (
          <>
            {aggregateText(aggregate, labels)} · {ratings.length} {ratings.length === 1 ? "rating" : "ratings"}
            {agreement !== undefined ? ` · ${Math.round(agreement * 100)}% agreement` : ""}
          </>
        ) : (
          <span class="muted">Not rated yet.</span>
        )}
      </p>
      {ratings.length > 0 ? (
        <ul class="everyone-ratings small" aria-label={`Ratings: ${template.name}`}>
          {ratings.map(([userId, rating]) => (
            <li key={userId} data-user={userId}>
              <span class={userId === meId ? "you" : "mono muted"}>{userId === meId ? "you" : short(userId)}</span> {valueText(type, rating.value, labels)}
              {rating.explanation ? <span class="muted"> — {rating.explanation}</span> : null}
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}

export function RatingsPanel({ projectId, family, recordId }: Props) {
  const loaded = useApi(() => load(projectId, family, recordId), [projectId, family, recordId]);
  const data = loaded.data;
  const after = (write: Promise<unknown>) => write.then(() => loaded.reload());
  return (
    <section class="ratings-panel" aria-label="Ratings" data-testid="ratings-panel">
      <h4>Ratings</h4>
      {loaded.error ? <ErrorNotice error={loaded.error} onRetry={loaded.reload} /> : null}
      {data && data.templates.length === 0 ? <p class="muted small">This project has no annotation templates yet (POST /v2/projects/{"{pid}"}/annotation/templates).</p> : null}
      {data?.templates.map((template) => (
        <TemplateRatings
          key={template.id}
          template={template}
          feedback={data.record}
          meId={data.me.id}
          save={(value, explanation) => after(putRating(projectId, template.id, recordId, ratingBody(template.constraints, value, explanation)))}
          remove={() => after(deleteRating(projectId, template.id, recordId))}
        />
      ))}
    </section>
  );
}
