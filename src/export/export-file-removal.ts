/**
 * Removes the R2 objects of export files that are due: 24 hours after they were made, at once
 * after an erasure made them unservable (src/deletion/job-parts.ts), or when their export failed.
 * Run by the hourly cron and after each deletion queue message. Each file's objects (the file,
 * any partial part left, an unfinished multipart upload) go first, then the row is marked
 * removed: a run cut short leaves the row due, and the next run removes what is left.
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";

/** Files one run removes at most; the rest wait for the next run. */
const FILES_PER_RUN = 100;

interface DueFile {
  job_id: string;
  object_key: string;
  upload_id: string | null;
  completed_at: number | null;
}

export async function removeDueExportFiles(env: Env, now: number = nowMicros()): Promise<{ removed: number; complete: boolean }> {
  const { results } = await env.DB.prepare(
    "SELECT job_id, object_key, upload_id, completed_at FROM export_files WHERE removed_at IS NULL AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2",
  )
    .bind(now, FILES_PER_RUN)
    .all<DueFile>();
  for (const file of results) {
    if (file.upload_id !== null && file.completed_at === null) {
      await env.EXPORTS.resumeMultipartUpload(file.object_key, file.upload_id)
        .abort()
        .catch(() => undefined);
    }
    // The file and its partial parts (`<key>.partial-<step>`) share the key as a prefix.
    for (;;) {
      const listed = await env.EXPORTS.list({ prefix: file.object_key, limit: 1000 });
      if (listed.objects.length > 0) await env.EXPORTS.delete(listed.objects.map((o) => o.key));
      if (!listed.truncated) break;
    }
    // An export still running when its file became due (an erasure, 24 hours) ends here.
    await env.DB.batch([
      env.DB.prepare("UPDATE export_files SET removed_at = ?2 WHERE job_id = ?1").bind(file.job_id, now),
      env.DB.prepare(
        "UPDATE org_jobs SET status = 'failed', error_message = 'The export was stopped: its file was removed before it was complete (records of the organization were erased, or 24 hours passed). Export again.', updated_at = ?2 WHERE id = ?1 AND status IN ('queued', 'running')",
      ).bind(file.job_id, now),
    ]);
  }
  return { removed: results.length, complete: results.length < FILES_PER_RUN };
}
