/**
 * The time window of a metrics request and its buckets (contract, section 9): bucket i covers
 * [start + i × interval, start + (i + 1) × interval), the last one ending at `end_time`. Pure.
 */
import { microsToIso } from "../db/client";
import { RequestValidationError } from "../http/errors";
import { isoToMicros } from "../ingest/timestamps";

export const MAX_BUCKETS = 1_000;
const MICROS_PER_MINUTE = 60_000_000;

export interface MetricsWindow {
  startMicros: number;
  endMicros: number;
  intervalMicros: number;
  buckets: number;
}

function fault(field: string, msg: string, input: unknown, ctx: Record<string, unknown> = {}): RequestValidationError {
  return new RequestValidationError([{ loc: ["body", field], msg: `Value error, ${msg}`, type: "value_error", input, ctx: { error: msg, ...ctx } }]);
}

/** The window of a request, or a 422 naming the field: unreadable times, end not after start, too many buckets. */
export function metricsWindow(startTime: string, endTime: string, intervalMinutes: number, intervalField: string): MetricsWindow {
  const startMicros = isoToMicros(startTime);
  if (startMicros === undefined) throw fault("start_time", "start_time is not an ISO 8601 date-time", startTime);
  const endMicros = isoToMicros(endTime);
  if (endMicros === undefined) throw fault("end_time", "end_time is not an ISO 8601 date-time", endTime);
  if (endMicros <= startMicros) throw fault("end_time", "end_time must be after start_time", endTime);
  const intervalMicros = intervalMinutes * MICROS_PER_MINUTE;
  const buckets = Math.ceil((endMicros - startMicros) / intervalMicros);
  if (buckets > MAX_BUCKETS) {
    throw fault(intervalField, `an interval of ${intervalMinutes} minutes makes ${buckets} buckets between start_time and end_time; at most ${MAX_BUCKETS} are allowed (choose a longer interval or a shorter range)`, intervalMinutes, { max_buckets: MAX_BUCKETS });
  }
  return { startMicros, endMicros, intervalMicros, buckets };
}

/** Edge `index` (0 to buckets) of the window: bucket i runs from edge i to edge i + 1, the last edge being end_time. */
export function bucketEdgeIso(window: MetricsWindow, index: number): string {
  return microsToIso(Math.min(window.startMicros + index * window.intervalMicros, window.endMicros));
}
