/**
 * The records table's Export button: the table's filter, order and columns out as a file, either
 * streamed into a download or, for large runs, as a queued export to R2 whose progress is
 * followed here and whose signed link is offered when it is done. For admins, the same popover
 * deletes the records matching the filter, after a dry run's counts.
 */
import { useEffect, useState } from "preact/hooks";
import type { RunRef } from "../api/endpoints";
import { getCurrentUser } from "../api/endpoints";
import type { Family, FilterJson } from "../api/types";
import { ErrorNotice } from "../views/error-notice";
import { type Counts, deleteByFilter, downloadExport, type ExportFormat, orgJob, type OrgJobState, type QueuedExport, queueExport } from "./export-api";

interface Props {
  run: RunRef;
  family: Family;
  filter: FilterJson | null;
  sort: { column: string; ascending: boolean } | null;
  columns: string[];
  /** After a deletion: the table reads its page again. */
  onDeleted: () => void;
}

const FORMATS: { value: ExportFormat; label: string }[] = [
  { value: "jsonl", label: "JSON lines, nested" },
  { value: "jsonl_flat", label: "JSON lines, one record a line" },
  { value: "csv", label: "CSV (the table's columns)" },
];

const POLL_MS = 1000;

/** Polls an org-job until it is over. */
function useJob(jobId: string | null): { job: OrgJobState | null; error: unknown } {
  const [job, setJob] = useState<OrgJobState | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    if (!jobId) return;
    let live = true;
    let timer: ReturnType<typeof setTimeout>;
    const poll = () =>
      orgJob(jobId).then(
        (state) => {
          if (!live) return;
          setJob(state);
          if (state.status === "queued" || state.status === "running") timer = setTimeout(poll, POLL_MS);
        },
        (caught: unknown) => live && setError(caught),
      );
    setJob(null);
    setError(null);
    void poll();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [jobId]);
  return { job, error };
}

const describe = (c: Counts) => `${c.sessions} sessions, ${c.traces} traces and ${c.spans} spans`;

export function ExportMenu({ run, family, filter, sort, columns, onDeleted }: Props) {
  const [open, setOpen] = useState(false);
  const [format, setFormat] = useState<ExportFormat>("jsonl");
  const [redact, setRedact] = useState(true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [queued, setQueued] = useState<QueuedExport | null>(null);
  const [isAdmin, setIsAdmin] = useState(false);
  const [dryRun, setDryRun] = useState<Counts | null>(null);
  const [deletion, setDeletion] = useState<{ message: string; jobId: string | null } | null>(null);
  const exportJob = useJob(queued?.job_id ?? null);
  const deletionJob = useJob(deletion?.jobId ?? null);

  useEffect(() => {
    if (open) void getCurrentUser().then((user) => setIsAdmin(user.role === "admin"), () => setIsAdmin(false));
  }, [open]);
  // A new filter is a new question: forget the answers about the old one.
  const filterKey = JSON.stringify(filter);
  useEffect(() => {
    setDryRun(null);
    setDeletion(null);
    setQueued(null);
  }, [filterKey, family]);
  useEffect(() => {
    if (deletionJob.job?.status === "completed") onDeleted();
  }, [deletionJob.job?.status]);

  const choice = { run, family, filter, sort, columns, format, redact };
  const act = (work: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    work().then(
      () => setBusy(false),
      (caught: unknown) => (setError(caught), setBusy(false)),
    );
  };

  const progress = exportJob.job?.progress;
  return (
    <div class="popover-anchor">
      <button type="button" aria-expanded={open} aria-haspopup="true" onClick={() => setOpen(!open)} data-testid="export-button">
        Export
      </button>
      {open ? (
        <div class="popover export-menu" role="dialog" aria-label="Export" onKeyDown={(e) => e.key === "Escape" && setOpen(false)}>
          <p class="muted">The {family} this table's filter matches, {sort?.column === "created_at" && sort.ascending ? "oldest" : "newest"} first.</p>
          <label>
            Format
            <select value={format} onChange={(e) => setFormat(e.currentTarget.value as ExportFormat)}>
              {FORMATS.map((f) => (
                <option key={f.value} value={f.value}>
                  {f.label}
                </option>
              ))}
            </select>
          </label>
          <label class="inline-check">
            <input type="checkbox" checked={redact} onChange={(e) => setRedact(e.currentTarget.checked)} /> Redacted input and output
          </label>
          <div class="export-actions">
            <button type="button" disabled={busy} onClick={() => act(() => downloadExport(choice))}>
              Download
            </button>
            <button type="button" disabled={busy} title="For large runs: a file prepared in the background, kept 24 hours" onClick={() => act(async () => setQueued(await queueExport(choice)))}>
              Export to a file
            </button>
          </div>
          {queued ? (
            <p class="notice" data-testid="export-job" data-status={exportJob.job?.status ?? "queued"} aria-live="polite">
              {exportJob.job?.status === "completed" ? (
                <>
                  Ready: <a href={queued.url} download={queued.file_name}>{queued.file_name}</a> ({progress?.records_exported} records, kept until{" "}
                  {new Date(queued.url_expires_at).toLocaleString()})
                </>
              ) : exportJob.job?.status === "failed" ? (
                <>The export failed: {exportJob.job.error_message}</>
              ) : (
                <>
                  Exporting… {progress?.records_exported ?? 0} records ({((progress?.bytes_written ?? 0) / 1e6).toFixed(1)} MB) written
                </>
              )}
            </p>
          ) : null}
          {isAdmin ? (
            <div class="export-delete">
              <button type="button" disabled={busy} data-testid="delete-matching" onClick={() => act(async () => setDryRun((await deleteByFilter(run, family, filter, true)).would_delete ?? null))}>
                Delete the {family} matching this filter…
              </button>
              {dryRun && !deletion ? (
                <div class="confirm" data-testid="delete-dry-run">
                  <p>
                    This deletes {describe(dryRun)}
                    {filter ? "" : " (no filter: every one of this run)"}. It cannot be undone.
                  </p>
                  <button
                    type="button"
                    class="button-danger"
                    disabled={busy || dryRun.sessions + dryRun.traces + dryRun.spans === 0}
                    data-testid="confirm-delete-matching"
                    onClick={() =>
                      act(async () => {
                        const answer = await deleteByFilter(run, family, filter, false);
                        setDeletion({ message: answer.message, jobId: answer.job_id });
                        if (!answer.job_id) onDeleted();
                      })
                    }
                  >
                    Delete {describe(dryRun)}
                  </button>
                </div>
              ) : null}
              {deletion ? (
                <p class="notice" data-testid="delete-result" aria-live="polite">
                  {deletion.jobId && deletionJob.job?.status !== "completed" ? `Deleting… (job ${deletion.jobId})` : deletion.message}
                </p>
              ) : null}
            </div>
          ) : null}
          {error || exportJob.error || deletionJob.error ? <ErrorNotice error={error ?? exportJob.error ?? deletionJob.error} /> : null}
        </div>
      ) : null}
    </div>
  );
}
