/** Bindings of the worker (wrangler.toml) and its secrets (.dev.vars / `wrangler secret put`). */
import type { PasswordGuard } from "./limits/password-guard";
import type { ScanSlots } from "./limits/scan-slots";

export interface DeletionMessage {
  /** The job to advance; the selector and progress live in the job row, never in the message. */
  jobId: string;
  /**
   * The database whose part of the job this message advances (a shard's binding name, or "DB"
   * for the catalog). Absent in messages sent before sharding: the catalog's part.
   */
  shard?: string;
}

/** A message of the move queue (src/moves/move-queue.ts): advance this move. */
export interface MoveMessage {
  moveId: string;
  /** The move's message_seq when this message was sent: a message of an older seq is a stale duplicate. */
  seq: number;
}

/** A message of the export queue (src/export/export-queue-consumer.ts): advance this export. */
export interface ExportMessage {
  jobId: string;
}

/** A message of the upkeep queue (src/upkeep): catch up the derived data of this database. */
export interface UpkeepMessage {
  /** A D1 binding name that holds records (a shard's, or "DB" for the catalog). */
  shard: string;
}

/** A message of the alert delivery queue (src/alerts/delivery-consumer.ts): attempt this delivery (its id is the `webhook-id`). */
export interface AlertDeliveryMessage {
  deliveryId: string;
}

/** A message of the alert evaluation queue (src/alerts/evaluation-fanout.ts): evaluate these rules if still due in `minute`. */
export interface AlertEvaluationMessage {
  minute: number;
  ruleIds: string[];
}

/**
 * A message of the evaluation queue (src/evaluations): score these records of one run (written
 * or updated just now), advance a backfill job, or score pending results past due.
 */
export type EvaluationMessage =
  /** intake: the write's marker of these ids (src/evaluations/scoring-intake.ts), deleted once handled. */
  | { kind: "score"; organizationId: string; projectId: string; runId: string; recordIds: string[]; intake?: { shard: string; id: string } }
  | { kind: "backfill"; jobId: string }
  /**
   * Pending results past due whose delayed message never came, claimed by the cron's sweep
   * (src/evaluations/due-results.ts); claimedAt in microseconds; shard: the database they were
   * claimed on (a partition's shard; absent in messages of older workers: the project's own).
   */
  | { kind: "due"; organizationId: string; projectId: string; runId: string; pairs: [string, string][]; claimedAt: number; shard?: string };

declare global {
  namespace Cloudflare {
    interface Env {
      /** The catalog database (organizations, users, keys, projects, runs, jobs, placement). */
      DB: D1Database;
      /**
       * The trace explorer's files (wrangler.toml [assets], ui/dist). The worker serves its page to
       * browser navigations only (src/http/explorer-or-not-found.ts); absent where no assets are
       * configured, and then every path that is no route is a JSON 404.
       */
      ASSETS?: Fetcher;
      /**
       * The data shards that take new projects, in order: D1 binding names, comma-separated
       * (docs/sharding.md). Default: "DB", the catalog alone.
       */
      DATA_SHARDS?: string;
      /** A shard at or above this size (bytes) takes no new project. Default 8 GB. */
      SHARD_HIGH_WATER_BYTES?: string;
      /** Ingest into a project whose shard is at or above this size (bytes) is a 507. Default 9.5 GB. */
      SHARD_HARD_LIMIT_BYTES?: string;
      /** A project's open partition closes once it holds this many roots (docs/partitions.md). Default 250,000. */
      PARTITION_MAX_ROOTS?: string;
      /** A project's open partition closes once it is this many days old. Default 7. */
      PARTITION_MAX_DAYS?: string;
      /**
       * "on": partitions roll by themselves (roots, age, the shard's high-water mark); default
       * "off" until every read path spans partitions (docs/partitions.md, "Status").
       */
      PARTITION_ROLLING?: string;
      DELETION_QUEUE: Queue<DeletionMessage>;
      /** Moves of projects between shards (docs/sharding.md, "Moving a project"). */
      MOVE_QUEUE: Queue<MoveMessage>;
      /** Queued exports (src/export, docs/export.md "Queued export to R2"). */
      EXPORT_QUEUE: Queue<ExportMessage>;
      /** The upkeep of derived data, started by the writes (src/upkeep, docs/search.md "The text index"). */
      UPKEEP_QUEUE: Queue<UpkeepMessage>;
      /** Deliveries of alert notifications and channel tests (src/alerts, docs/alerts.md). */
      ALERT_QUEUE: Queue<AlertDeliveryMessage>;
      /** One minute's due alert rules in batches, evaluated by its consumer (src/alerts/evaluation-fanout.ts). */
      ALERT_EVALUATION_QUEUE: Queue<AlertEvaluationMessage>;
      /** Online evaluations: records to score after their write, and backfill jobs (src/evaluations, docs/evaluations.md). */
      EVALUATION_QUEUE: Queue<EvaluationMessage>;
      /** The secret judge integrations' keys are sealed with (AES-GCM, HKDF); TOKEN_SECRET when unset. */
      EVALUATION_SECRET?: string;
      /** "local": judge endpoints may be loopback and private addresses (wrangler dev: npm start, tests). */
      JUDGE_DESTINATIONS?: string;
      /** Retry delays of a failed judge call in seconds, comma-separated (default "5,30,120,300"); tests shorten them. */
      JUDGE_RETRY_DELAYS_SECONDS?: string;
      /** "local": channels may use http and local addresses (wrangler dev: npm start, tests); else https to public hosts only. */
      ALERT_DESTINATIONS?: string;
      /** Retry delays of a failed delivery in seconds, comma-separated, the last repeated (default "5,30,120,600,3600"); tests shorten them. */
      ALERT_RETRY_DELAYS_SECONDS?: string;
      /** How long a delivery is retried, in seconds (default 86400). */
      ALERT_RETRY_FOR_SECONDS?: string;
      /** The service's public origin, for the permalinks of notifications (npm start sets its own address). */
      PUBLIC_URL?: string;
      /** The files of queued exports, served for 24 hours by a signed URL. */
      EXPORTS: R2Bucket;
      /** Pages of 100 roots one export queue message writes at most (default 50); the tests lower it. */
      EXPORT_PAGES_PER_MESSAGE?: string;
      /** HS256 secret for bearer tokens (also signs export download URLs). */
      TOKEN_SECRET: string;
      /** Bearer token lifetime in seconds (default one day). */
      TOKEN_TTL_SECONDS?: string;
      /** "1" turns on the bill's meter and its GET /__meter (src/http/d1-meter.ts); only the benches set it. */
      D1_METER?: string;
      /** Brute-force guards, one object per email and per client IP (src/limits/password-guard.ts). */
      PASSWORD_GUARD: DurableObjectNamespace<PasswordGuard>;
      /** Scan slots, one object per organization (src/limits/scan-slots.ts). */
      SCAN_SLOTS: DurableObjectNamespace<ScanSlots>;
      /** Requests per organization (src/limits/organization-rate.ts). */
      ORG_RATE_LIMITER: RateLimit;
      /** Configurable limits (src/limits/limit-settings.ts, docs/limits.md); unset means the default. */
      ORG_CONCURRENT_SCANS?: string;
      ORG_SCAN_TIME_PERCENT?: string;
      TEXT_INDEX_MAX_CANDIDATES?: string;
      TEXT_INDEX_LAG_SCAN_MAX_RECORDS?: string;
      /** "false": writes do not start the upkeep; only the cron runs it (src/upkeep/upkeep-request.ts). Default on. */
      UPKEEP_AFTER_WRITES?: string;
      /** Seconds a database's upkeep waits after the writes that ask for it, to take them together (src/upkeep/upkeep-pace.ts). */
      UPKEEP_COALESCE_SECONDS?: string;
      /** Records one metrics request may aggregate by scanning; past it a 503 (src/analytics/scan-bound.ts). */
      METRICS_SCAN_MAX_RECORDS?: string;
      EXPORT_SLOT_WAIT_SECONDS?: string;
      PASSWORD_FREE_FAILURES_PER_EMAIL?: string;
      PASSWORD_FREE_FAILURES_PER_IP?: string;
      PASSWORD_MAX_LOCKOUT_SECONDS?: string;
      PASSWORD_FORGET_AFTER_SECONDS?: string;
    }
  }
}

export type Env = Cloudflare.Env;
