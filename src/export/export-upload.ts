/**
 * Advances a queued export by one queue message: reads pages from its keyset cursor, writes the
 * text to R2 and saves where it stands.
 *
 * R2's multipart uploads want every part but the last of one size, so the text is cut into parts
 * of exactly PART_BYTES; what is left over at the end of a message (less than a part) is the
 * partial part, kept as an object of its own (`<key>.partial-<step>`) and read back by the next
 * message, which goes on filling it. An export smaller than one part is a single put. The object
 * of the partial part is named by the step that wrote it, so a redelivered message, which starts
 * again from the saved step, reads the partial part of that step, never a later one.
 */
import { nowMicros } from "../db/client";
import type { Env } from "../env";
import { countingD1 } from "../http/d1-round-trips";
import { projectRoute } from "../shards/project-routing";
import { projectPartitions } from "../partitions/partition-catalog";
import { otherShardsOf } from "../partitions/read-shards";
import { shardDatabase } from "../shards/shard-config";
import { bindAnnotationColumns } from "../search/bind-annotation-columns";
import { withinRetention } from "../search/retention-window";
import { withinSearchAdmission } from "../search/search-cost";
import type { ExportFormat } from "./export-formats";
import { type ExportAdvance, type ExportFileState, type UploadedPart, partialKeyOf, saveAdvance } from "./export-jobs";
import { exportQueryOf } from "./export-request";
import { exportChunks } from "./export-writer";

/** R2's smallest part but the last (5 MiB): at most 10,000 parts, so files up to 50 GiB. */
export const PART_BYTES = 5 * 1024 * 1024;
/** Pages of roots (100 each) one message writes at most, unless EXPORT_PAGES_PER_MESSAGE says otherwise. */
const DEFAULT_PAGES_PER_MESSAGE = 50;
/** D1 round trips after which a message stops at the end of its page (of the 1,000 an invocation may make). */
const MESSAGE_QUERY_BUDGET = 500;
/** Wall time after which a message stops at the end of its page. */
const MESSAGE_TIME_BUDGET_MS = 20_000;

export function pagesPerMessage(env: Env): number {
  const configured = Number(env.EXPORT_PAGES_PER_MESSAGE);
  return Number.isSafeInteger(configured) && configured > 0 ? configured : DEFAULT_PAGES_PER_MESSAGE;
}

/** Bytes in order, cut into parts of exactly PART_BYTES as they fill. */
class PartBuffer {
  private chunks: Uint8Array[] = [];
  size = 0;

  push(bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    this.chunks.push(bytes);
    this.size += bytes.byteLength;
  }

  /** The first `length` bytes, removed from the buffer. */
  take(length: number): Uint8Array {
    const out = new Uint8Array(length);
    let filled = 0;
    while (filled < length) {
      const head = this.chunks[0]!;
      const wanted = length - filled;
      if (head.byteLength <= wanted) {
        out.set(head, filled);
        filled += head.byteLength;
        this.chunks.shift();
      } else {
        out.set(head.subarray(0, wanted), filled);
        this.chunks[0] = head.subarray(wanted);
        filled += wanted;
      }
    }
    this.size -= length;
    return out;
  }

  takeAll(): Uint8Array {
    return this.take(this.size);
  }
}

export type AdvanceOutcome = "continues" | "completed" | "superseded";

/**
 * One message's work on an active export. Throws on a failure worth retrying (the database, R2);
 * the message is then retried from the saved state.
 */
export async function advanceExport(env: Env, state: ExportFileState): Promise<AdvanceOutcome> {
  const started = Date.now();
  const { request } = state;
  const body = request.body;
  const format: ExportFormat = body.export_format;
  const { base, columns } = exportQueryOf(body);
  const [route, partitions] = await Promise.all([
    projectRoute(env, { organizationId: state.organizationId } as Parameters<typeof projectRoute>[1], state.projectId),
    projectPartitions(env, state.projectId),
  ]);
  const queries = { count: 0 };
  const db = countingD1(shardDatabase(env, route.shard), queries);
  // The shards of the project's other partitions: their pages merge with the home shard's (export-reader.ts).
  const others = otherShardsOf(partitions, route.shard).map((partition) => countingD1(shardDatabase(env, partition.shard), queries));
  await bindAnnotationColumns(db, state.projectId, base);
  const query = withinRetention(base, route.retentionDays, nowMicros());
  const scope = { organizationId: state.organizationId, projectId: state.projectId, runId: request.run_id, runKind: request.run_kind };
  const source = { db, others, scope, admit: <T>(page: typeof query, work: () => Promise<T>) => withinSearchAdmission(env, state.organizationId, page, work) };

  const buffer = new PartBuffer();
  if (state.partialBytes > 0) {
    const partial = await env.EXPORTS.get(partialKeyOf(state.objectKey, state.step));
    if (!partial) throw new Error(`the partial part of step ${state.step} is missing from R2`);
    buffer.push(new Uint8Array(await partial.arrayBuffer()));
  }
  const httpMetadata = { contentType: state.contentType, contentDisposition: `attachment; filename="${state.fileName}"` };
  let upload = state.uploadId === null ? undefined : env.EXPORTS.resumeMultipartUpload(state.objectKey, state.uploadId);
  const parts: UploadedPart[] = [...state.parts];
  const advance: ExportAdvance = { ...state, parts, completed: false };
  const encoder = new TextEncoder();

  const flushFullParts = async () => {
    while (buffer.size >= PART_BYTES) {
      upload ??= await env.EXPORTS.createMultipartUpload(state.objectKey, { httpMetadata });
      const partNumber = parts.length + 1;
      const part = await upload.uploadPart(partNumber, buffer.take(PART_BYTES));
      parts.push({ partNumber, etag: part.etag });
    }
  };

  const chunks = exportChunks({ source, query, format, columns, redact: body.redact }, state.cursor ?? undefined);
  let pages = 0;
  for (;;) {
    const next = await chunks.next();
    if (next.done) {
      advance.completed = true;
      break;
    }
    const chunk = next.value;
    const bytes = encoder.encode(chunk.text);
    buffer.push(bytes);
    advance.bytesWritten += bytes.byteLength;
    advance.recordsExported += chunk.records;
    if (chunk.oldestCreatedAt !== undefined) advance.oldestCreatedAt = Math.min(advance.oldestCreatedAt ?? chunk.oldestCreatedAt, chunk.oldestCreatedAt);
    await flushFullParts();
    // A message ends only where a page ends (where a cursor is): within a page, the next
    // message could not start from the middle of a root's records.
    if (!chunk.cursor) continue;
    advance.cursor = chunk.cursor;
    pages += 1;
    if (pages >= pagesPerMessage(env) || queries.count >= MESSAGE_QUERY_BUDGET || Date.now() - started >= MESSAGE_TIME_BUDGET_MS) {
      await chunks.return(undefined);
      break;
    }
  }

  if (advance.completed) {
    if (upload) {
      // The last part may be shorter than the others, never longer (it is under PART_BYTES).
      if (buffer.size > 0) {
        const partNumber = parts.length + 1;
        const part = await upload.uploadPart(partNumber, buffer.takeAll());
        parts.push({ partNumber, etag: part.etag });
      }
      await upload.complete(parts);
    } else {
      await env.EXPORTS.put(state.objectKey, buffer.takeAll(), { httpMetadata });
    }
    advance.partialBytes = 0;
  } else {
    advance.partialBytes = buffer.size;
    if (buffer.size > 0) await env.EXPORTS.put(partialKeyOf(state.objectKey, state.step + 1), buffer.takeAll());
  }
  advance.uploadId = upload?.uploadId ?? null;
  const saved = await saveAdvance(env, state, advance);
  if (!saved) return "superseded";
  // The partial part this message read is not needed any more.
  if (state.partialBytes > 0) await env.EXPORTS.delete(partialKeyOf(state.objectKey, state.step)).catch(() => undefined);
  return advance.completed ? "completed" : "continues";
}
