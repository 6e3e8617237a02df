/**
 * An operator's actions as the Storage contract sees them: who asked (recorded with the change
 * as a job event), the events read back, and the bulk actions done one bounded batch per call.
 * Types only; the semantics are in the header of ./storage.ts, which re-exports everything here,
 * and the checks every adapter runs first are in ./operator.ts.
 */
import type { JobFilter } from './search.js';
import type { JobStatus } from './status.js';

/** What an operator's change records about a job: it was retried or cancelled. */
export type JobEventKind = 'retried' | 'cancelled';

/** Who made an operator's change and from where; recorded with it, in the same transaction. */
export interface OperatorRef {
  /** who: 'dashboard:<session label>', 'cli:<user>@<host>', 'api', … (1–200 printable characters) */
  actor: string;
  /** from where: a remote address or a host name (at most 200 printable characters) */
  source?: string | null | undefined;
}

/** jobs.retry / jobs.cancel: the job, and who asked (when given, the change is recorded as an event). */
export interface OperatorChange {
  /** the job */
  id: string;
  /** who asked (see OperatorRef.actor); without it nothing is recorded */
  actor?: string | undefined;
  /** from where (see OperatorRef.source) */
  source?: string | null | undefined;
}

/** What an event knows of the job just before the change. */
export interface JobEventDetail {
  /** the job's status before the change */
  status: JobStatus;
  /** its attempt count before the change (a retry starts the count again from 0) */
  attempts: number;
  /**
   * the job's last attempt row when the change happened (after the one a cancel closed), null
   * before any: the event comes after that attempt and before every later one
   */
  lastAttemptId: string | null;
  /** set when the change was one job of a bulk action: that action's id */
  bulkId?: string;
}

/** One operator's change to one job, in the job's history beside its attempts. */
export interface JobEvent {
  /** the event's own id */
  id: string;
  /** the job changed */
  jobId: string;
  /** the database's clock when the change was written */
  at: Date;
  /** what was done */
  kind: JobEventKind;
  /** who did it */
  actor: string;
  /** from where, when known */
  source: string | null;
  /** the job just before the change */
  detail: JobEventDetail;
}

/** What a bulk action does to each matching job. */
export type BulkAction = 'retry' | 'cancel' | 'delete';

/** The parts of a search's filter a bulk batch reads itself (exact status, queue and type); the rest is found by jobs.search and given as `ids`. */
export type BulkFilter = Pick<JobFilter, 'status' | 'queue' | 'type'>;

/** The jobs of one batch: ids in (afterId, throughId], matching the filter and a status the action may leave. */
export interface BulkRange {
  /** what the batch does */
  action: BulkAction;
  /** the exact filter the batch reads itself */
  filter: BulkFilter;
  /** ids above this one; null: from the first */
  afterId: string | null;
  /** ids up to and including this one */
  throughId: string;
  /** only these jobs (at most BULK_MAX_LIMIT ids), e.g. a page of jobs.search */
  ids?: readonly string[] | undefined;
}

/** One batch of a bulk action (jobs.bulk). */
export interface BulkBatch extends BulkRange, OperatorRef {
  /** at most this many jobs (1–1000), lowest ids first */
  limit: number;
  /** the bulk action this batch belongs to, recorded in each event's detail */
  bulkId: string;
}

/** What one bulk batch did. */
export interface BulkBatchResult {
  /** the jobs this batch changed (deleted, for 'delete'), ascending */
  ids: string[];
  /** the afterId of the next batch: the last id this batch took, or throughId when the range holds no more */
  next: string;
}
