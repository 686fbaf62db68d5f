/**
 * Which partition each record of a write goes to (contract section 13, "Finding a root";
 * docs/partitions.md): its root's. A root on the shard the write goes to anyway is found by the
 * upsert itself (write-records.ts, no round trip). Roots that may be stored on another shard are
 * looked up there, all such shards in parallel: one round trip, and only when the project has
 * partitions on more than one shard and the request holds a record whose root is not one of its
 * own new roots.
 *
 * A root in the request is taken as new (no lookup) when its created_at is at least
 * NEW_ROOT_MARGIN_MICROS after the open partition opened: it cannot have been written into an
 * older partition, short of a client clock that far behind (a re-sent root with an old time is
 * looked up, so a retry across a roll merges into its stored copy).
 *
 * The groups are written one batch each, on their shards, in parallel: atomic per shard, not
 * across shards; each is a merging upsert, so a retry of a request that failed on one shard ends
 * as the request would have.
 */
import type { Env } from "../env";
import type { PartitionRoute } from "../partitions/partition-catalog";
import { shardDatabase } from "../shards/shard-config";
import type { RecordBatch, RecordRow } from "./record-rows";
import { type HeldRelease, type HeldRow, heldOfRecordsStatement } from "./held-elsewhere";

/** 60 s: the partition cache's 4 s and clock differences between clients and the service. */
export const NEW_ROOT_MARGIN_MICROS = 60_000_000;

/**
 * The listed ids stored on a shard, with their partition; and those erased there (tombstoned, seq
 * null): a late child or update of an erased root must meet its tombstone, which is on the shard
 * the deletion ran on, not on the open partition's (two primary-key probes per id).
 */
const FIND = `
SELECT id, coalesce(partition_seq, 1) AS seq FROM records WHERE project_id = ?1 AND id IN (SELECT value FROM json_each(?2))
UNION ALL
SELECT record_id AS id, NULL AS seq FROM record_tombstones WHERE project_id = ?1 AND record_id IN (SELECT value FROM json_each(?2))`;

interface Found {
  id: string;
  seq: number | null;
}

/**
 * The partition a found id sends its write to: the record's own; for a tombstone, the newest of the
 * project's partitions on that shard (the write there is refused by the tombstone, as on a project
 * of one partition). A stored record wins over a tombstone of the same id.
 */
function foundPartition(partitions: readonly PartitionRoute[], shard: string, row: Found): PartitionRoute | undefined {
  if (row.seq !== null) return partitions.find((p) => p.seq === row.seq && p.shard === shard);
  return partitions.filter((p) => p.shard === shard).at(-1);
}

function remember(found: Map<string, PartitionRoute>, partitions: readonly PartitionRoute[], shard: string, rows: readonly Found[]): void {
  for (const row of rows) {
    const partition = foundPartition(partitions, shard, row);
    if (partition && (row.seq !== null || !found.has(row.id))) found.set(row.id, partition);
  }
}

export interface WriteGroup {
  partition: PartitionRoute;
  batch: RecordBatch;
  /** Updates of this group's records held on other shards, carried into its write (held-elsewhere.ts). */
  adopt: HeldRow[];
}

/** A split write: its groups, and the held updates to delete where they were once the groups are written. */
export interface WritePlan {
  groups: WriteGroup[];
  release: HeldRelease[];
}

export const rootOf = (record: Pick<RecordRow, "id" | "session_id" | "trace_id">): string => record.session_id ?? record.trace_id ?? record.id;

function subset(batch: RecordBatch, keep: (index: number) => boolean): RecordBatch {
  const indexes = batch.records.map((_, i) => i).filter(keep);
  // Parents, present columns and pending prices are harmless beyond their records (each an
  // idempotent mark that applies only where the records are), so every group carries them all.
  return { ...batch, records: indexes.map((i) => batch.records[i]!), encoded: indexes.map((i) => batch.encoded[i]!) };
}

/**
 * Where a record of the write is already placed, if anywhere but the open partition's shard: its
 * own stored copy first (a record never changes partition), then its trace's (a child stays with
 * its trace even when the session it names was never stored), then its root's.
 */
function storedPlace(found: ReadonlyMap<string, PartitionRoute>, record: RecordRow): PartitionRoute | undefined {
  return found.get(record.id) ?? (record.trace_id ? found.get(record.trace_id) : undefined) ?? found.get(rootOf(record));
}

const whole = (open: PartitionRoute, batch: RecordBatch): WritePlan => ({ groups: [{ partition: open, batch, adopt: [] }], release: [] });

/**
 * The batch split by the partition of each record's root; the open partition's group first
 * (possibly empty). When roots are looked up on other shards, the held updates of the batch's
 * traces and spans are read on every shard of the project in the same round trip, and those held
 * on a shard other than their record's destination are carried there (held-elsewhere.ts).
 */
export async function groupByRootPartition(env: Env, partitions: readonly PartitionRoute[], open: PartitionRoute, batch: RecordBatch): Promise<WritePlan> {
  const elsewhere = [...new Set(partitions.filter((p) => p.shard !== open.shard).map((p) => p.shard))];
  if (elsewhere.length === 0) return whole(open, batch);
  const inRequest = new Map(batch.records.map((r) => [r.id, r]));
  const ask = new Set<string>();
  for (const record of batch.records) {
    const root = rootOf(record);
    const stated = inRequest.get(root);
    if (stated && rootOf(stated) === root && stated.created_at >= open.openedAt + NEW_ROOT_MARGIN_MICROS) continue;
    // The record itself and its trace too, not only its root: a trace of a session that was never
    // stored was its own root when first written, so a re-send finds no session anywhere and must
    // still meet its stored copy (see storedPlace).
    for (const id of [root, record.trace_id, record.id]) if (id) ask.add(id);
  }
  if (ask.size === 0) return whole(open, batch);
  const found = new Map<string, PartitionRoute>();
  const ids = JSON.stringify([...ask]);
  const patchable = batch.records.filter((r) => r.record_type !== "session").map((r) => r.id);
  const runId = batch.records[0]?.run_id;
  const heldOn = new Map<string, HeldRow[]>();
  const readHeld = (shard: string, result: D1Result<HeldRow> | undefined) => {
    if (result && result.results.length > 0) heldOn.set(shard, result.results);
  };
  await Promise.all([
    ...elsewhere.map(async (shard) => {
      const db = shardDatabase(env, shard);
      const [rows, held] = await db.batch<any>([db.prepare(FIND).bind(open.projectId, ids), ...(runId && patchable.length > 0 ? [heldOfRecordsStatement(db, patchable, runId)] : [])]);
      remember(found, partitions, shard, rows!.results as Found[]);
      readHeld(shard, held as D1Result<HeldRow> | undefined);
    }),
    ...(runId && patchable.length > 0
      ? [
          (async () => {
            const db = shardDatabase(env, open.shard);
            readHeld(open.shard, await heldOfRecordsStatement(db, patchable, runId).all<HeldRow>());
          })(),
        ]
      : []),
  ]);
  const target = batch.records.map((r) => storedPlace(found, r) ?? open);
  const groups: WriteGroup[] = [{ partition: open, batch: subset(batch, (i) => target[i] === open), adopt: [] }];
  // One write per shard: partitions on the same shard share it (the upsert gives each record its root's).
  for (const shard of new Set(target.filter((p) => p !== open).map((p) => p.shard))) {
    const partition = target.find((p) => p !== open && p.shard === shard)!;
    groups.push({ partition, batch: subset(batch, (i) => target[i] !== open && target[i]!.shard === shard), adopt: [] });
  }
  // Held updates on a shard other than their record's destination travel with the record.
  const destination = new Map(batch.records.map((r, i) => [r.id, target[i]!.shard]));
  const release: HeldRelease[] = [];
  for (const [shard, rows] of heldOn) {
    const away = rows.filter((row) => destination.has(row.record_id) && destination.get(row.record_id) !== shard);
    if (away.length === 0) continue;
    release.push({ shard, rows: away });
    for (const row of away) groups.find((g) => g.partition.shard === destination.get(row.record_id))!.adopt.push(row);
  }
  return { groups, release };
}

/**
 * The partition holding a stored record (an update's target), or the open one when no other
 * shard holds it (it is then on the open partition's shard, or not stored yet: its update is held
 * there, where a new record goes). One parallel lookup, only when the project spans shards.
 */
export async function partitionOfRecord(env: Env, partitions: readonly PartitionRoute[], open: PartitionRoute, id: string): Promise<PartitionRoute> {
  return (await partitionsOfRoots(env, partitions, open, [id])).get(id) ?? open;
}

/**
 * The partition of each of these roots stored (or erased: see FIND) on a shard other than the open
 * partition's (one parallel lookup; none when the project is on one shard). Roots found nowhere
 * else are absent: they go to the open partition, whose shard's upsert finds them if stored there.
 */
export async function partitionsOfRoots(env: Env, partitions: readonly PartitionRoute[], open: PartitionRoute, roots: readonly string[]): Promise<Map<string, PartitionRoute>> {
  const found = new Map<string, PartitionRoute>();
  const elsewhere = [...new Set(partitions.filter((p) => p.shard !== open.shard).map((p) => p.shard))];
  if (elsewhere.length === 0 || roots.length === 0) return found;
  const ids = JSON.stringify([...new Set(roots)]);
  await Promise.all(
    elsewhere.map(async (shard) => {
      const rows = await shardDatabase(env, shard).prepare(FIND).bind(open.projectId, ids).all<Found>();
      remember(found, partitions, shard, rows.results);
    }),
  );
  return found;
}
