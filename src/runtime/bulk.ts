/**
 * Bulk actions: retry, cancel or delete every job matching a search's filter, done on the server
 * in bounded batches (jobs.bulk: one transaction each, at most `batchSize` jobs), each change
 * recorded under one bulk id. A filter of exact status, queue and type is read by the batches
 * themselves, over ranges of at most RANGE_IDS ids (so a batch reads a bounded number of rows
 * whatever the filter matches); any other filter (prefixes, an id, a key, text) is read by
 * jobs.search, page by page toward older jobs, and each page is a batch of ids. Either way the
 * jobs are those there when the action starts (up to the newest id then); a job enqueued during
 * it is left alone, and each job is changed only from a status the action takes. Between
 * batches the event loop turns, so this process's claims and heartbeats never wait behind a long
 * action. `previewBulk` counts first, for the operator's confirmation.
 */
import { randomBytes } from 'node:crypto';
import { setImmediate as turn } from 'node:timers/promises';
import { ValidationError } from '../core/index.js';
import { ACTION_STATUSES, BULK_MAX_LIMIT, checkBulkBatch, checkBulkRange } from '../core/operator.js';
import { MAX_COUNT_CAP, SEARCH_MAX_LIMIT, checkJobFilter } from '../core/search.js';
import type { BulkAction, BulkFilter, JobFilter, OperatorRef, Storage } from '../core/storage.js';
import { LocalBus } from './env.js';

/** ids per batch's range: what one batch may read, matching or not */
export const RANGE_IDS = 10_000;
/** ids per count's range */
const COUNT_RANGE_IDS = 100_000;

export const DEFAULT_BULK = { batchSize: 500, max: 100_000 } as const;

/** A bulk action and the jobs it is for. */
export interface BulkRequest {
  /** what to do to each matching job: retry, cancel or delete */
  action: BulkAction;
  /** which jobs: those matching this filter when the action starts */
  filter: JobFilter;
}

/** A bulk action as `runBulk` takes it: the request, who asks, and how it runs. */
export interface BulkOptions extends BulkRequest, OperatorRef {
  /** jobs per batch, one transaction each (default 500, at most 1000) */
  batchSize?: number;
  /** stop after this many jobs changed (default 100,000); `done` says whether it got through */
  max?: number;
  /** ids per batch's range, what one batch may read (default RANGE_IDS) */
  rangeIds?: number;
  /** count only (as previewBulk); nothing is changed */
  dryRun?: boolean;
  /** stops between batches */
  signal?: AbortSignal;
  /** after each batch that changed jobs: the totals so far (awaited before the next batch) */
  onProgress?: (p: { changed: number; throughId: string }) => void | Promise<void>;
}

/** What a bulk action did. */
export interface BulkResult {
  /** recorded in every event of this action */
  bulkId: string;
  /** dry run: how many jobs match now (at most `max`); else how many were changed (deleted, for 'delete') */
  count: number;
  /** the jobs changed, ascending (empty on a dry run) */
  ids: string[];
  /** false when `max` or the signal stopped it before the newest job it started with (dry run: more than `max` match) */
  done: boolean;
}

const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);

/** The newest job's id, or null when there is none: where an action started now ends. */
async function newestId(storage: Storage): Promise<string | null> {
  const [j] = await storage.jobs.list({ limit: 1 });
  return j ? j.id : null;
}

/** Whether the batches read the filter themselves: exact status, queue and type only. */
function readsItself(f: JobFilter): f is BulkFilter {
  return Object.entries(f).every(([k, v]) => v === undefined || k === 'status' || k === 'queue' || k === 'type');
}

/** What a batch given a page of ids still checks itself: the status, which may have moved since the search. */
const statusOnly = (f: JobFilter): BulkFilter => (f.status === undefined ? {} : { status: f.status });

function positive(name: string, v: number | undefined, fallback: number, most: number): number {
  if (v === undefined) return fallback;
  if (!Number.isInteger(v) || v < 1 || v > most) throw new ValidationError('INVALID_OPTION', `${name} must be an integer from 1 to ${most}; got ${String(v)}`);
  return v;
}

/**
 * How many jobs the action would change now, counted up to `cap` (default: the run's default
 * max): past it `exact` is false. A filter the batches read is counted range by range, exactly;
 * any other by jobs.countMatching per status the action takes (estimated past its cap).
 */
/** What a bulk action's preview answers: how many jobs it would change. */
export interface BulkPreview {
  /** matching jobs, up to the preview's cap */
  count: number;
  /** false when the count stopped at the cap */
  exact: boolean;
}

export async function previewBulk(storage: Storage, req: BulkRequest, cap: number = DEFAULT_BULK.max): Promise<BulkPreview> {
  positive('cap', cap, cap, Number.MAX_SAFE_INTEGER);
  if (!readsItself(req.filter)) return countMatching(storage, req, cap);
  checkBulkRange({ ...req, filter: req.filter, afterId: null, throughId: '1' });
  const last = await newestId(storage);
  let n = 0;
  for (let after = 0n; last !== null && after < BigInt(last); after = min(after + BigInt(COUNT_RANGE_IDS), BigInt(last))) {
    if (n >= cap) return { count: cap, exact: false };
    const through = min(after + BigInt(COUNT_RANGE_IDS), BigInt(last));
    n += await storage.jobs.bulkCount({ ...req, filter: req.filter, afterId: after === 0n ? null : String(after), throughId: String(through) });
    await turn();
  }
  return n > cap ? { count: cap, exact: false } : { count: n, exact: true };
}

async function countMatching(storage: Storage, req: BulkRequest, cap: number): Promise<{ count: number; exact: boolean }> {
  checkBulkRange({ action: req.action, filter: statusOnly(req.filter), afterId: null, throughId: '1' });
  const statuses = ACTION_STATUSES[req.action].filter((st) => req.filter.status === undefined || st === req.filter.status);
  let count = 0;
  let exact = true;
  for (const status of statuses) {
    const m = await storage.jobs.countMatching({ filter: { ...req.filter, status }, cap: Math.min(cap, MAX_COUNT_CAP) });
    count += m.count;
    exact &&= m.exact;
  }
  return count > cap ? { count: cap, exact: false } : { count, exact: exact && count <= cap };
}

/** Run a bulk action to the newest job there was when it started, or until `max` or the signal. */
export async function runBulk(storage: Storage, o: BulkOptions): Promise<BulkResult> {
  const batchSize = positive('batchSize', o.batchSize, DEFAULT_BULK.batchSize, BULK_MAX_LIMIT);
  const max = positive('max', o.max, DEFAULT_BULK.max, Number.MAX_SAFE_INTEGER);
  const range = BigInt(positive('rangeIds', o.rangeIds, RANGE_IDS, Number.MAX_SAFE_INTEGER));
  const bulkId = `bulk-${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
  // every check of a batch (and of the search's filter) before the first, so bad input fails also when there is no job
  const own = readsItself(o.filter);
  if (!own) checkJobFilter(o.filter);
  checkBulkBatch({ ...o, filter: own ? o.filter : statusOnly(o.filter), afterId: null, throughId: '1', limit: batchSize, bulkId });
  if (o.dryRun) {
    const preview = await previewBulk(storage, o, max);
    return { bulkId, count: preview.count, ids: [], done: preview.exact };
  }
  const last = await newestId(storage);
  const run: Run = { storage, o, bulkId, batchSize, max, ids: [], end: last === null ? 0n : BigInt(last) };
  const done = own ? await byRange(run, o.filter as BulkFilter, range) : await bySearch(run);
  const ids = run.ids.sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  return { bulkId, count: ids.length, ids, done };
}

interface Run {
  storage: Storage;
  o: BulkOptions;
  bulkId: string;
  batchSize: number;
  max: number;
  /** changed so far */
  ids: string[];
  /** the newest id when the action started */
  end: bigint;
}

/** One batch; where the next one starts (jobs.bulk's `next`). */
async function batch(run: Run, filter: BulkFilter, afterId: bigint, throughId: bigint, limit: number, ids?: string[]): Promise<string> {
  const { storage, o } = run;
  const r = await storage.jobs.bulk({
    action: o.action, filter, actor: o.actor, source: o.source, bulkId: run.bulkId,
    afterId: afterId === 0n ? null : String(afterId), throughId: String(throughId), limit, ...(ids ? { ids } : {}),
  });
  run.ids.push(...r.ids);
  if (r.ids.length > 0) {
    announce(storage, o.action, r.ids);
    await o.onProgress?.({ changed: run.ids.length, throughId: r.next });
  }
  await turn();
  return r.next;
}

const going = (run: Run): boolean => run.ids.length < run.max && !run.o.signal?.aborted;

/** The batches read the filter over the id ranges up to the end; true when they got there. */
async function byRange(run: Run, filter: BulkFilter, range: bigint): Promise<boolean> {
  let after = 0n;
  while (after < run.end && going(run)) {
    after = BigInt(await batch(run, filter, after, min(after + range, run.end), Math.min(run.batchSize, run.max - run.ids.length)));
  }
  return after >= run.end;
}

/** jobs.search reads the filter, a page at a time toward older jobs from the end; each page is a batch. True when no older job matched. */
async function bySearch(run: Run): Promise<boolean> {
  const { storage, o } = run;
  let before: string | null = String(run.end + 1n);
  while (run.end > 0n && before !== null && going(run)) {
    const page = await storage.jobs.search({ filter: o.filter, beforeId: before, limit: Math.min(run.batchSize, SEARCH_MAX_LIMIT, run.max - run.ids.length) });
    const ids = page.jobs.map((j) => j.id);
    if (ids.length > 0) await batch(run, statusOnly(o.filter), 0n, run.end, ids.length, ids);
    before = page.older;
  }
  return run.end === 0n || before === null;
}

/** What this process's workers learn at once: retried jobs are due, cancelled ones' handlers are signalled. */
function announce(storage: Storage, action: BulkAction, ids: readonly string[]): void {
  const bus = LocalBus.for(storage);
  if (action === 'retry') bus.jobsEnqueued();
  else if (action === 'cancel') for (const id of ids) bus.jobCancelled(id);
}
