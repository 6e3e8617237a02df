/**
 * Finding jobs: the filter an operator types (exact or prefix names, an id, a key, a schedule,
 * and a text test bounded to the newest candidates), checked here once for every adapter (a
 * ValidationError before any query, the same on every database), and the pure pieces every
 * adapter's search shares: the text's case fold and the escaping of prefix patterns.
 *
 * Matching rules, the same on every database: names, keys and schedule names compare exactly
 * (case and trailing spaces count), a prefix is a prefix of exactly those characters; `text` is
 * a substring of the job's last error code, last error or payload JSON text, with ASCII letters
 * A-Z folded to lower case on both sides and every other character compared exactly.
 *
 * Bounds: a filter with a part an index answers on every database (an id, an exact idempotency
 * key, a schedule name, status failed, dead, cancelled or running) reads what that index holds.
 * Any other filter (queue, type, a key prefix, status queued or succeeded, text alone) reads
 * only the jobs whose ids lie within `readLimit` of the cursor, and its text test only the first
 * `scanLimit` jobs matching the rest: a page past either bound says where to go on.
 */
import { ValidationError } from './errors.js';
import { validateName } from './job-input.js';
import { validateKeyText } from './limits.js';
import { JOB_STATUSES, type JobStatus } from './status.js';
import type { JobCount, JobRow } from './storage-jobs.js';

/** Which jobs: every field given must hold (an exact name and its prefix form exclude each other). */
export interface JobFilter {
  /** exactly this status */
  status?: JobStatus | undefined;
  /** exactly this queue */
  queue?: string | undefined;
  /** queues starting with this */
  queuePrefix?: string | undefined;
  /** exactly this type */
  type?: string | undefined;
  /** types starting with this */
  typePrefix?: string | undefined;
  /** one job id (a decimal string) */
  id?: string | undefined;
  /** exactly this idempotency key */
  idempotencyKey?: string | undefined;
  /** idempotency keys starting with this */
  idempotencyKeyPrefix?: string | undefined;
  /** jobs a schedule of this name enqueued */
  scheduleName?: string | undefined;
  /** a substring of the last error code, last error or payload JSON (ASCII case folded); tested on the newest `scanLimit` candidates only */
  text?: string | undefined;
}

/** jobs.search: one page, newest first; `beforeId` pages to older jobs, `afterId` to newer ones. */
export interface JobSearch {
  /** which jobs (default: all) */
  filter?: JobFilter | undefined;
  /** jobs with a smaller id (the next older page) */
  beforeId?: string | undefined;
  /** jobs with a larger id (the next newer page) */
  afterId?: string | undefined;
  /** at most this many per page */
  limit: number;
  /** with `text`: the text test sees at most this many jobs matching the other filters, from the cursor on (default SEARCH_SCAN_LIMIT) */
  scanLimit?: number | undefined;
  /** a filter no index answers reads only the jobs whose ids lie within this many of the cursor (default SEARCH_READ_LIMIT) */
  readLimit?: number | undefined;
}

/** One page of a search. */
export interface JobSearchPage {
  /** newest first */
  jobs: JobRow[];
  /** `beforeId` of the next older page; null: no older job matches (with text: none among the candidates, and no more candidates) */
  older: string | null;
  /** `afterId` of the next newer page; null: no newer job matches (the same rule) */
  newer: string | null;
  /** the page stopped at `readLimit` or `scanLimit` before filling up: more may match past `older` (or `newer`) */
  scanCapped: boolean;
}

/** jobs.countMatching: how many jobs match, exact up to `cap`. */
export interface MatchCountQuery {
  /** which jobs (default: all) */
  filter?: JobFilter | undefined;
  /** default COUNT_CAP */
  cap?: number | undefined;
  /** as JobSearch.scanLimit */
  scanLimit?: number | undefined;
  /** as JobSearch.readLimit */
  readLimit?: number | undefined;
}

/** How many jobs match a filter. */
export interface MatchCount {
  /** the count (see `exact` and `estimated`) */
  count: number;
  /** false: more may match. `estimated` says whether `count` is the planner's estimate or a lower bound (`cap`, or the text matches among the candidates) */
  exact: boolean;
  /** true when `count` is the planner's estimate */
  estimated: boolean;
}

/** queues.summary: the overview's counts, bounded by `cap` rows per status. */
export interface JobSummaryQuery {
  /** default COUNT_CAP */
  cap?: number | undefined;
}

/** How many jobs hold one status. */
export interface StatusTotal extends MatchCount {
  /** the status */
  status: JobStatus;
}

/** The overview's counts (`queues.summary`). */
export interface JobSummary {
  /** every status, in JOB_STATUSES order: exact when at most `cap` jobs hold it, else as a count past its cap */
  statuses: StatusTotal[];
  /** by queue, type and status, for the statuses counted exactly; `due`: queued or failed with run_at <= now */
  groups: JobCount[];
}

export const SEARCH_MAX_LIMIT = 500;
export const SEARCH_SCAN_LIMIT = 10_000;
export const SEARCH_MAX_SCAN_LIMIT = 100_000;
export const SEARCH_READ_LIMIT = 100_000;
export const SEARCH_MAX_READ_LIMIT = 1_000_000;
export const COUNT_CAP = 10_000;
export const MAX_COUNT_CAP = 100_000;
export const SEARCH_TEXT_MAX = 200;
const KEY_MAX = 255;

/** An exact name or a prefix of one; `like` is the LIKE pattern (ESCAPE '!'), `glob` the GLOB pattern of the same match. */
export interface NameMatch {
  value: string;
  prefix: boolean;
  like: string;
  glob: string;
}

/** A JobFilter as the adapters read it: checked, each match spelled out once. */
export interface CheckedFilter {
  status: JobStatus | null;
  queue: NameMatch | null;
  type: NameMatch | null;
  idempotencyKey: NameMatch | null;
  id: string | null;
  scheduleName: string | null;
  /** the text test's needle, ASCII folded (foldAscii) */
  text: string | null;
}

export interface CheckedSearch {
  filter: CheckedFilter;
  beforeId: string | null;
  afterId: string | null;
  limit: number;
  scanLimit: number;
  readLimit: number;
}

export interface CheckedCount {
  filter: CheckedFilter;
  cap: number;
  scanLimit: number;
  readLimit: number;
}

/** Statuses every database keeps an index of its own for (partial, or led by status): rare rows. */
const INDEXED_STATUSES: readonly JobStatus[] = ['failed', 'dead', 'cancelled', 'running', 'waiting'];

/**
 * Whether a filter reads within `readLimit` of its cursor: it tests something no index answers on
 * every database, and has no part that one does (which then narrows the read by itself).
 */
export function readsByRange(f: CheckedFilter): boolean {
  const narrowed = f.id !== null || (f.idempotencyKey !== null && !f.idempotencyKey.prefix) || f.scheduleName !== null || (f.status !== null && INDEXED_STATUSES.includes(f.status));
  return !narrowed && (f.queue !== null || f.type !== null || f.idempotencyKey !== null || f.status !== null || f.text !== null);
}

const FILTER_KEYS = ['status', 'queue', 'queuePrefix', 'type', 'typePrefix', 'id', 'idempotencyKey', 'idempotencyKeyPrefix', 'scheduleName', 'text'];
const MAX_ID = 2n ** 63n - 1n;
// C0 and C1 control characters and DEL: nobody searches for them, and PostgreSQL text holds no NUL
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

const invalid = (message: string): never => {
  throw new ValidationError('INVALID_OPTION', message);
};

/** ASCII letters A-Z to lower case, every other character as it is: the fold every database applies alike. */
export function foldAscii(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/** LIKE pattern (ESCAPE '!') matching `value` exactly, or as a prefix. */
export function likePattern(value: string, prefix: boolean): string {
  return value.replace(/[!%_]/g, '!$&') + (prefix ? '%' : '');
}

/** GLOB pattern (SQLite; case-sensitive) matching `value` exactly, or as a prefix. */
export function globPattern(value: string, prefix: boolean): string {
  return value.replace(/[*?[]/g, '[$&]') + (prefix ? '*' : '');
}

/** A job id as given (a positive decimal below 2^63); `what` names it in the error. */
export function checkSearchId(what: string, v: unknown): string {
  if (typeof v !== 'string' || !/^[1-9][0-9]{0,18}$/.test(v) || BigInt(v) > MAX_ID) invalid(`${what} must be a job id (a positive decimal number); got ${JSON.stringify(v)}`);
  return v as string;
}

function match(value: string, prefix: boolean): NameMatch {
  return { value, prefix, like: likePattern(value, prefix), glob: globPattern(value, prefix) };
}

/** An exact name or its prefix form, one of the two; names as enqueue accepts them. */
function nameMatch(f: JobFilter, exact: 'queue' | 'type', check: (what: string, v: unknown) => string): NameMatch | null {
  const pre = `${exact}Prefix` as const;
  if (f[exact] !== undefined && f[pre] !== undefined) invalid(`filter: give ${exact} or ${pre}, not both`);
  if (f[exact] !== undefined) return match(check(`filter.${exact}`, f[exact]), false);
  if (f[pre] !== undefined) return match(check(`filter.${pre}`, f[pre]), true);
  return null;
}

function keyMatch(f: JobFilter): NameMatch | null {
  if (f.idempotencyKey !== undefined && f.idempotencyKeyPrefix !== undefined) invalid('filter: give idempotencyKey or idempotencyKeyPrefix, not both');
  if (f.idempotencyKey !== undefined) return match(validateKeyText('filter.idempotencyKey', f.idempotencyKey, KEY_MAX), false);
  if (f.idempotencyKeyPrefix !== undefined) return match(validateKeyText('filter.idempotencyKeyPrefix', f.idempotencyKeyPrefix, KEY_MAX), true);
  return null;
}

function checkText(v: unknown): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > SEARCH_TEXT_MAX) invalid(`filter.text must be 1-${SEARCH_TEXT_MAX} characters; got ${typeof v === 'string' ? `${v.length} characters` : JSON.stringify(v)}`);
  const s = v as string;
  if (CONTROL.test(s) || /\p{Cs}/u.test(s)) invalid(`filter.text must be printable text; got ${JSON.stringify(s)}`);
  return foldAscii(s);
}

export function checkJobFilter(f: unknown): CheckedFilter {
  if (f === undefined || f === null) f = {};
  if (typeof f !== 'object' || Array.isArray(f)) return invalid('filter must be an object');
  const given = f as Record<string, unknown>;
  for (const k of Object.keys(given)) if (!FILTER_KEYS.includes(k)) invalid(`filter has no field ${JSON.stringify(k)}; its fields are ${FILTER_KEYS.join(', ')}`);
  const jf = given as JobFilter;
  if (jf.status !== undefined && !(JOB_STATUSES as readonly unknown[]).includes(jf.status)) invalid(`filter.status must be one of ${JOB_STATUSES.join(', ')}; got ${JSON.stringify(jf.status)}`);
  return {
    status: jf.status ?? null,
    queue: nameMatch(jf, 'queue', validateName),
    type: nameMatch(jf, 'type', validateName),
    idempotencyKey: keyMatch(jf),
    id: jf.id === undefined ? null : checkSearchId('filter.id', jf.id),
    scheduleName: jf.scheduleName === undefined ? null : validateName('filter.scheduleName', jf.scheduleName),
    text: jf.text === undefined ? null : checkText(jf.text),
  };
}

function intIn(what: string, v: unknown, min: number, max: number, fallback?: number): number {
  if (v === undefined && fallback !== undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) invalid(`${what} must be a whole number from ${min} to ${max}; got ${String(v)}`);
  return v as number;
}

export function checkJobSearch(p: JobSearch): CheckedSearch {
  if (typeof p !== 'object' || p === null) return invalid('search must be an object');
  if (p.beforeId !== undefined && p.afterId !== undefined) invalid('give beforeId or afterId, not both');
  return {
    filter: checkJobFilter(p.filter),
    beforeId: p.beforeId === undefined ? null : checkSearchId('beforeId', p.beforeId),
    afterId: p.afterId === undefined ? null : checkSearchId('afterId', p.afterId),
    limit: intIn('limit', p.limit, 1, SEARCH_MAX_LIMIT),
    scanLimit: intIn('scanLimit', p.scanLimit, 1, SEARCH_MAX_SCAN_LIMIT, SEARCH_SCAN_LIMIT),
    readLimit: intIn('readLimit', p.readLimit, 1, SEARCH_MAX_READ_LIMIT, SEARCH_READ_LIMIT),
  };
}

export function checkMatchCount(p: MatchCountQuery): CheckedCount {
  if (typeof p !== 'object' || p === null) return invalid('count query must be an object');
  return {
    filter: checkJobFilter(p.filter),
    cap: intIn('cap', p.cap, 1, MAX_COUNT_CAP, COUNT_CAP),
    scanLimit: intIn('scanLimit', p.scanLimit, 1, SEARCH_MAX_SCAN_LIMIT, SEARCH_SCAN_LIMIT),
    readLimit: intIn('readLimit', p.readLimit, 1, SEARCH_MAX_READ_LIMIT, SEARCH_READ_LIMIT),
  };
}

export function checkSummary(p: JobSummaryQuery | undefined): { cap: number } {
  if (p !== undefined && (typeof p !== 'object' || p === null)) return invalid('summary query must be an object');
  return { cap: intIn('cap', p?.cap, 1, MAX_COUNT_CAP, COUNT_CAP) };
}

/** The id just below `id` (an exclusive upper cursor that includes `id` itself), as a decimal string. */
export function idBelow(id: string): string {
  return String(BigInt(id) - 1n);
}

/** The id just above `id`. */
export function idAbove(id: string): string {
  return String(BigInt(id) + 1n);
}
