/**
 * The rules of an operator's changes, decided here once for every adapter: which statuses each
 * action may take a job from, the checks on who asked and on a bulk batch (a ValidationError
 * before anything is written, the same on every database), and where a batch's next one starts.
 */
import { ValidationError } from './errors.js';
import { validateName } from './job-input.js';
import { JOB_STATUSES, type JobStatus } from './status.js';
import type { BulkAction, BulkBatch, BulkRange, JobEventKind } from './storage-events.js';

/** The statuses each action takes a job from: retry and cancel as jobs.retry and jobs.cancel; delete anything not running. */
export const ACTION_STATUSES: Readonly<Record<BulkAction, readonly JobStatus[]>> = {
  retry: ['queued', 'failed', 'dead', 'cancelled'],
  cancel: ['queued', 'failed', 'running', 'waiting'],
  delete: ['queued', 'failed', 'succeeded', 'dead', 'cancelled'],
};

/**
 * Why an operator's retry must not take a job its status allows, or null: a workflow job whose
 * parents have not all succeeded would run before them, and a batch member whose ending the
 * batch has counted would be counted twice (every adapter's retry guard says the same in SQL).
 */
export function retryRefusal(job: { status: JobStatus; pendingParents?: number | undefined; batchId?: string | undefined }): string | null {
  if ((job.pendingParents ?? 0) > 0) return `it waits for ${job.pendingParents} parent job(s) that have not succeeded (a workflow whose parent failed is enqueued again, not retried)`;
  if (job.batchId !== undefined && (job.status === 'dead' || job.status === 'cancelled')) return `batch ${job.batchId} has counted how it ended`;
  return null;
}

/** The event each recorded action writes (a deleted job's events go with it). */
export const ACTION_EVENT: Readonly<Record<Exclude<BulkAction, 'delete'>, JobEventKind>> = { retry: 'retried', cancel: 'cancelled' };

export const BULK_ACTIONS: readonly BulkAction[] = ['retry', 'cancel', 'delete'];

/** The most jobs one bulk batch may change: one batch is one transaction. */
export const BULK_MAX_LIMIT = 1000;

/** The most events jobs.events returns for one job unless asked for fewer. */
export const EVENTS_LIMIT = 1000;

const MAX_TEXT = 200;
// C0 and C1 control characters and DEL: text shown in terminals and pages as it is
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

function text(what: string, v: unknown, optional: boolean): string | null {
  if (optional && (v === undefined || v === null)) return null;
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_TEXT || CONTROL.test(v)) {
    throw new ValidationError('INVALID_OPTION', `${what} must be 1-${MAX_TEXT} printable characters; got ${JSON.stringify(v)}`);
  }
  return v;
}

/** Who asked, checked; null when no actor was given (then nothing is recorded, and a source alone is refused). */
export function checkOperator(p: { actor?: unknown; source?: unknown }): { actor: string; source: string | null } | null {
  if (p.actor === undefined || p.actor === null) {
    if (p.source !== undefined && p.source !== null) throw new ValidationError('INVALID_OPTION', 'source is recorded with an actor: give both');
    return null;
  }
  return { actor: text('actor', p.actor, false) as string, source: text('source', p.source, true) };
}

const MAX_ID = 2n ** 63n - 1n;

/** A job id (positive decimal, at most 2^63 - 1) as given; `what` names it in the error. */
export function checkJobId(what: string, v: unknown): string {
  if (typeof v !== 'string' || !/^[1-9][0-9]{0,18}$/.test(v) || BigInt(v) > MAX_ID) {
    throw new ValidationError('INVALID_OPTION', `${what} must be a job id; got ${JSON.stringify(v)}`);
  }
  return v;
}

/** A bulk range, checked, with the statuses it may take (the action's, narrowed by the filter's status). */
export interface CheckedRange {
  action: BulkAction;
  statuses: readonly JobStatus[];
  queue: string | null;
  type: string | null;
  /** '0' when the range starts at the first job */
  afterId: string;
  throughId: string;
  /** only these jobs, ascending and distinct; null: every job of the range */
  ids: readonly string[] | null;
}

/** A bulk batch, checked. */
export interface CheckedBatch extends CheckedRange {
  limit: number;
  operator: { actor: string; source: string | null };
  bulkId: string;
}

export function checkBulkRange(r: BulkRange): CheckedRange {
  if (!BULK_ACTIONS.includes(r.action)) throw new ValidationError('INVALID_OPTION', `action must be one of ${BULK_ACTIONS.join(', ')}; got ${JSON.stringify(r.action)}`);
  const f = r.filter ?? {};
  // a filter part a batch does not read would be ignored, widening the action: refused instead
  const unread = Object.entries(f).filter(([k, v]) => v !== undefined && !['status', 'queue', 'type'].includes(k)).map(([k]) => k);
  if (unread.length > 0) throw new ValidationError('INVALID_OPTION', `a bulk batch filters on status, queue and type only (not ${unread.join(', ')}): pass the jobs jobs.search finds as ids`);
  if (f.status !== undefined && !(JOB_STATUSES as readonly string[]).includes(f.status)) {
    throw new ValidationError('INVALID_OPTION', `filter.status must be one of ${JOB_STATUSES.join(', ')}; got ${JSON.stringify(f.status)}`);
  }
  const queue = f.queue === undefined ? null : validateName('filter.queue', f.queue);
  const type = f.type === undefined ? null : validateName('filter.type', f.type);
  const afterId = r.afterId === null ? '0' : checkJobId('afterId', r.afterId);
  const throughId = checkJobId('throughId', r.throughId);
  let ids: string[] | null = null;
  if (r.ids !== undefined) {
    if (!Array.isArray(r.ids) || r.ids.length > BULK_MAX_LIMIT) throw new ValidationError('INVALID_OPTION', `ids must be an array of at most ${BULK_MAX_LIMIT} job ids`);
    ids = [...new Set(r.ids.map((id) => checkJobId('ids[]', id)))].sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  }
  const all = ACTION_STATUSES[r.action];
  const statuses = f.status === undefined ? all : all.filter((s) => s === f.status);
  return { action: r.action, statuses, queue, type, afterId, throughId, ids };
}

export function checkBulkBatch(b: BulkBatch): CheckedBatch {
  const range = checkBulkRange(b);
  if (!Number.isInteger(b.limit) || b.limit < 1 || b.limit > BULK_MAX_LIMIT) {
    throw new ValidationError('INVALID_OPTION', `limit must be an integer between 1 and ${BULK_MAX_LIMIT}; got ${String(b.limit)}`);
  }
  const operator = checkOperator(b);
  if (!operator) throw new ValidationError('INVALID_OPTION', 'a bulk action needs an actor: every change is recorded');
  if (typeof b.bulkId !== 'string' || !/^[A-Za-z0-9._:-]{1,64}$/.test(b.bulkId)) {
    throw new ValidationError('INVALID_OPTION', `bulkId must be 1-64 characters of letters, digits and . _ : -; got ${JSON.stringify(b.bulkId)}`);
  }
  return { ...range, limit: b.limit, operator, bulkId: b.bulkId };
}

/** Whether the range can hold no job at all (no status to take, no id given, or afterId not below throughId). */
export function rangeIsEmpty(b: CheckedRange): boolean {
  return b.statuses.length === 0 || b.ids?.length === 0 || BigInt(b.afterId) >= BigInt(b.throughId);
}

/** Where the next batch starts: after the last job taken when the batch was full, else past the range. */
export function nextAfter(b: CheckedBatch, taken: number, lastTakenId: string | null): string {
  return taken >= b.limit && lastTakenId !== null ? lastTakenId : b.throughId;
}
