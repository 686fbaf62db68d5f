/**
 * Deletion by metadata (organization admins): a dry run shows what would go, a confirmation names
 * the counts, then the queued job's progress is followed until it completes or fails. The service
 * refuses members (403) whatever the page shows; the page does not offer them the action.
 */
import { useEffect, useState } from "preact/hooks";
import { deleteByMetadata, getOrgJob } from "../api/endpoints";
import type { CurrentUser, DeletionCounts, OrgJob } from "../api/types";
import { ErrorNotice } from "./error-notice";

const POLL_MS = 700;

type Step =
  | { kind: "form" }
  | { kind: "counted"; counts: DeletionCounts; message: string }
  | { kind: "running"; jobId: string; expected: DeletionCounts; job: OrgJob | null }
  | { kind: "finished"; message: string; job: OrgJob | null; expected: DeletionCounts | null };

const total = (c: DeletionCounts) => c.sessions + c.traces + c.spans;
const plural = (n: number, word: string) => `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;
const describe = (c: DeletionCounts) => `${plural(c.sessions, "session")}, ${plural(c.traces, "trace")} and ${plural(c.spans, "span")}`;

function deletedOf(job: OrgJob | null): DeletionCounts {
  const p = job?.progress;
  return { sessions: p?.sessions_deleted ?? 0, traces: p?.traces_deleted ?? 0, spans: p?.spans_deleted ?? 0 };
}

function Progress({ job, expected }: { job: OrgJob | null; expected: DeletionCounts }) {
  const done = total(deletedOf(job));
  const max = Math.max(total(expected), done, 1);
  const complete = job?.status === "completed";
  return (
    <div class="job-progress" data-testid="job-progress" data-status={job?.status ?? "queued"}>
      <progress max={max} value={complete ? max : done} aria-label="Deletion progress" />
      <span>
        {job?.status ?? "queued"}: {describe(deletedOf(job))} deleted
        {complete ? "" : ` of about ${total(expected).toLocaleString("en-US")} records`}
      </span>
    </div>
  );
}

export function ErasePage({ user }: { user: CurrentUser | null }) {
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const [step, setStep] = useState<Step>({ kind: "form" });
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (step.kind !== "running") return;
    let stopped = false;
    const poll = async () => {
      try {
        const job = await getOrgJob(step.jobId);
        if (stopped) return;
        if (job.status === "completed" || job.status === "failed") {
          setStep({ kind: "finished", job, expected: step.expected, message: job.status === "completed" ? `Deleted ${describe(deletedOf(job))}.` : "The deletion failed." });
          return;
        }
        setStep({ ...step, job });
      } catch (caught) {
        if (stopped) return;
        setError(caught);
      }
      if (!stopped) timer = setTimeout(poll, POLL_MS);
    };
    let timer = setTimeout(poll, POLL_MS);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [step.kind === "running" ? step.jobId : null]);

  if (!user) return <main class="page"><p class="muted">Loading…</p></main>;
  if (user.role !== "admin") {
    return (
      <main class="page">
        <h1>Erase data</h1>
        <p class="notice">Only organization admins can erase data. Ask an admin of your organization.</p>
      </main>
    );
  }

  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  const dryRun = (event: Event) => {
    event.preventDefault();
    void run(async () => {
      const answer = await deleteByMetadata(key, value, "dry_run");
      setStep({ kind: "counted", counts: answer.would_delete ?? { sessions: 0, traces: 0, spans: 0 }, message: answer.message });
    });
  };

  const confirm = (expected: DeletionCounts) =>
    run(async () => {
      const answer = await deleteByMetadata(key, value, "queued");
      if (answer.job_id) setStep({ kind: "running", jobId: answer.job_id, expected, job: null });
      else setStep({ kind: "finished", message: answer.message, job: null, expected: null });
    });

  const editable = step.kind === "form" || step.kind === "counted" || step.kind === "finished";
  return (
    <main class="page">
      <h1>Erase data</h1>
      <p class="muted">
        Deletes, in <strong>every project of your organization</strong>, each session, trace and span whose metadata key equals the value exactly, with
        everything under it. It cannot be undone.
      </p>
      <form class="card erase-form" onSubmit={dryRun}>
        <label>
          Metadata key
          <input name="metadata_key" required maxLength={256} value={key} disabled={!editable} onInput={(e) => (setKey(e.currentTarget.value), setStep({ kind: "form" }))} />
        </label>
        <label>
          Value
          <input name="metadata_value" value={value} disabled={!editable} onInput={(e) => (setValue(e.currentTarget.value), setStep({ kind: "form" }))} />
        </label>
        <button type="submit" disabled={busy || !key || !editable}>
          Dry run
        </button>
      </form>
      {error ? <ErrorNotice error={error} /> : null}
      {step.kind === "counted" ? (
        total(step.counts) === 0 ? (
          <p class="notice" data-testid="dry-run-result">
            Nothing matches <code>{key}</code> = <code>{value}</code>.
          </p>
        ) : (
          <div class="card confirm" data-testid="dry-run-result">
            <p>
              This would delete <strong>{describe(step.counts)}</strong>.
            </p>
            <button type="button" class="button-danger" disabled={busy} onClick={() => void confirm(step.counts)} data-testid="confirm-delete">
              Delete {describe(step.counts)}
            </button>{" "}
            <button type="button" onClick={() => setStep({ kind: "form" })}>
              Cancel
            </button>
          </div>
        )
      ) : null}
      {step.kind === "running" ? <Progress job={step.job} expected={step.expected} /> : null}
      {step.kind === "finished" ? (
        <div data-testid="job-finished" data-status={step.job?.status ?? "none"}>
          {step.job && step.expected ? <Progress job={step.job} expected={step.expected} /> : null}
          <p class={`notice${step.job?.status === "failed" ? " notice-error" : ""}`}>
            {step.message}
            {step.job?.error_message ? ` ${step.job.error_message}` : ""}
          </p>
        </div>
      ) : null}
    </main>
  );
}
