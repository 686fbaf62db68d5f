/** The organization's annotation queues, each with its size and the caller's progress. */
import { Link } from "../routing/navigation";
import { hrefOf } from "../routing/routes";
import { ErrorNotice } from "../views/error-notice";
import { useApi } from "../views/use-api";
import { currentUser, queryQueues } from "./annotation-api";
import "./annotations.css";

/** Queues listed: the route's page maximum. */
const QUEUES_SHOWN = 100;

export function QueuesPage() {
  const loaded = useApi(() => Promise.all([queryQueues(0, QUEUES_SHOWN), currentUser()]), []);
  const [answer, me] = loaded.data ?? [];
  return (
    <main class="page">
      <h1>Annotation queues</h1>
      {loaded.error ? <ErrorNotice error={loaded.error} onRetry={loaded.reload} /> : null}
      {loaded.loading && !loaded.data ? <p class="muted">Loading…</p> : null}
      {answer && answer.annotation_queues.length === 0 ? <p class="muted">No queues yet (POST /v2/annotation_queues, then add records to it).</p> : null}
      <ul class="card-list" aria-label="Queues">
        {answer?.annotation_queues.map((queue) => {
          const mine = me ? (queue.num_logs_annotated?.[me.id] ?? 0) : 0;
          return (
            <li key={queue.id}>
              <Link class="card card-link" href={hrefOf({ view: "queue", queueId: queue.id, at: 1 })} data-testid="queue-card">
                <strong>{queue.name}</strong>
                {queue.description ? <span class="muted">{queue.description}</span> : null}
                <span class="muted">
                  {queue.num_log_records} records · {queue.num_templates} templates · {queue.num_annotators} annotators
                </span>
                <span>
                  You: {mine} of {queue.num_log_records} done
                </span>
              </Link>
            </li>
          );
        })}
      </ul>
      {answer?.paginated ? <p class="muted small">The first {QUEUES_SHOWN} queues are shown.</p> : null}
    </main>
  );
}
