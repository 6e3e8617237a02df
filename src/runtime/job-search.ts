/**
 * The dashboard's "find anything": a page of matching jobs with its count, and the overview's
 * bounded counts, each checked by core (a ValidationError before any query) and read through a
 * Storage. `jobFilterFromQuery` reads the filter from a URL's query, as the pages spell it.
 */
import { ValidationError } from '../core/errors.js';
import { checkJobSearch, checkMatchCount, checkSummary } from '../core/search.js';
import type { JobFilter, JobSearch, JobSearchPage, JobSummary, JobSummaryQuery, MatchCount } from '../core/search.js';
import type { Storage } from '../core/storage.js';

/** A page of the jobs a filter matches, and how many match in all. */
export interface FoundJobs {
  /** the page asked for */
  page: JobSearchPage;
  /** how many jobs match the whole filter (not only this page) */
  count: MatchCount;
}

/** One page and the count of the filter, read at once; `countCap` bounds the count (default 10,000). */
export async function findJobs(storage: Storage, p: JobSearch & { countCap?: number | undefined }): Promise<FoundJobs> {
  const { countCap, ...search } = p;
  const q = checkJobSearch(search);
  const counting = { filter: search.filter, cap: countCap, scanLimit: q.scanLimit, readLimit: q.readLimit };
  checkMatchCount(counting);
  const [page, count] = await Promise.all([storage.jobs.search(search), storage.jobs.countMatching(counting)]);
  return { page, count };
}

/** A page of matching jobs, without a count. */
export async function searchJobs(storage: Storage, p: JobSearch): Promise<JobSearchPage> {
  checkJobSearch(p);
  return storage.jobs.search(p);
}

/** The overview's counts: each status exact up to `cap`, the exact ones by queue and type. */
export async function summarizeJobs(storage: Storage, p?: JobSummaryQuery): Promise<JobSummary> {
  checkSummary(p);
  return storage.queues.summary(p);
}

/**
 * A filter from query parameters: `status`, `id`, `schedule`, `q` (the text); `queue`, `type` and
 * `key` (idempotency key) match exactly, or as a prefix when they end in `*`. Empty ones are
 * left out; anything else is refused.
 */
export function jobFilterFromQuery(query: URLSearchParams | Readonly<Record<string, string | undefined>>): JobFilter {
  const get = (k: string): string | undefined => (query instanceof URLSearchParams ? (query.get(k) ?? undefined) : query[k]) || undefined;
  const keys = query instanceof URLSearchParams ? [...query.keys()] : Object.keys(query);
  const known = ['status', 'id', 'schedule', 'q', 'queue', 'type', 'key'];
  for (const k of keys) if (!known.includes(k)) throw new ValidationError('INVALID_OPTION', `unknown search parameter ${JSON.stringify(k)}; known: ${known.join(', ')}`);
  const f: JobFilter = {};
  const name = (k: 'queue' | 'type' | 'key', exact: 'queue' | 'type' | 'idempotencyKey'): void => {
    const v = get(k);
    if (v === undefined) return;
    if (v.endsWith('*') && v.length > 1) f[`${exact}Prefix`] = v.slice(0, -1);
    else f[exact] = v;
  };
  name('queue', 'queue');
  name('type', 'type');
  name('key', 'idempotencyKey');
  const status = get('status');
  if (status !== undefined) f.status = status as JobFilter['status'];
  if (get('id') !== undefined) f.id = get('id');
  if (get('schedule') !== undefined) f.scheduleName = get('schedule');
  if (get('q') !== undefined) f.text = get('q');
  return f;
}
