/**
 * jobs.search, jobs.countMatching and queues.summary, once for every adapter: the pages, cursors
 * and counts are decided here from a few bounded reads each adapter answers in its own SQL
 * (`MatchReader`).
 *
 * A scan walks the jobs matching the filter's exact parts in id order from a cursor (newest
 * first toward older jobs, oldest first toward newer ones). A filter no index answers reads
 * only ids within readLimit of the cursor (core/search.ts readsByRange); with `text`, the text
 * test is applied to the first scanLimit of those only. No keystroke reads more rows than that.
 */
import { checkJobFilter, checkJobSearch, checkMatchCount, checkSummary, idAbove, idBelow, readsByRange } from '../core/search.js';
import type { CheckedFilter, JobSearch, JobSearchPage, JobSummary, JobSummaryQuery, MatchCount, MatchCountQuery, StatusTotal } from '../core/search.js';
import { JOB_STATUSES, type JobStatus } from '../core/status.js';
import type { JobCount, JobRow } from '../core/storage.js';

export interface MatchScan {
  filter: CheckedFilter;
  /** only ids below this one (null: no bound) */
  below: string | null;
  /** only ids above this one */
  above: string | null;
  /** true: id descending (toward older jobs); false: ascending */
  newestFirst: boolean;
  /** at most this many rows */
  limit: number;
  /** with filter.text: the text test sees only the first scanLimit candidates of the scan */
  scanLimit: number;
}

/** What an adapter answers for search and counts; every read bounded by `limit` or `scanLimit`. */
export interface MatchReader {
  /** the matching jobs in the scan's order, at most `limit` */
  rows(s: MatchScan): Promise<JobRow[]>;
  /** how many matches, at most `limit` */
  count(s: MatchScan): Promise<number>;
  /** with text: how many candidates the text test saw (at most scanLimit), and the last one's id */
  candidates(s: MatchScan): Promise<{ n: number; last: string | null }>;
  /** the planner's estimate of the jobs matching a text-less filter; null where the database keeps none */
  estimate(f: CheckedFilter): Promise<number | null>;
  /** jobs of these statuses by queue, type and status, with how many are due (queued or failed, run_at <= now) */
  groups(statuses: readonly JobStatus[]): Promise<JobCount[]>;
  /** the smallest and largest job id; null when there is no job */
  idRange(): Promise<{ min: bigint; max: bigint } | null>;
}

/** The smallest and largest job id, as the reader gives them. */
type IdRange = { min: bigint; max: bigint } | null;

/**
 * A scan from `cursor` (exclusive; null: from the newest end) one way. A filter that reads by
 * range reads only ids within readLimit of the cursor: `cut` is where that range stops short of
 * the table's far end (null: it reaches it), the cursor of the next page that way.
 */
function scanFrom(ids: IdRange, q: { filter: CheckedFilter; readLimit: number; scanLimit: number }, newestFirst: boolean, cursor: bigint | null, limit: number): { scan: MatchScan; cut: bigint | null } {
  const r = BigInt(q.readLimit);
  let below = newestFirst ? cursor : null;
  let above = newestFirst ? null : cursor;
  let cut: bigint | null = null;
  if (ids !== null && readsByRange(q.filter)) {
    if (newestFirst) {
      const far = (cursor ?? ids.max + 1n) - r;
      if (far > ids.min) [above, cut] = [far - 1n, far];
    } else {
      const far = (cursor ?? ids.min - 1n) + r;
      if (far < ids.max) [below, cut] = [far + 1n, far];
    }
  }
  const str = (v: bigint | null): string | null => (v === null ? null : String(v));
  return { scan: { filter: q.filter, below: str(below), above: str(above), newestFirst, limit, scanLimit: q.scanLimit }, cut };
}

/** Whether anything may match beyond a cursor: a match, a full window of text candidates, or ids the range left unread. */
async function anyBeyond(r: MatchReader, s: { scan: MatchScan; cut: bigint | null }): Promise<boolean> {
  if ((await r.rows(s.scan)).length > 0 || s.cut !== null) return true;
  return s.scan.filter.text !== null && (await r.candidates(s.scan)).n >= s.scan.scanLimit;
}

export async function searchPage(r: MatchReader, p: JobSearch): Promise<JobSearchPage> {
  const q = checkJobSearch(p);
  const ids = readsByRange(q.filter) ? await r.idRange() : null;
  const newestFirst = q.afterId === null;
  const cursor = newestFirst ? q.beforeId : q.afterId;
  const { scan, cut } = scanFrom(ids, q, newestFirst, cursor === null ? null : BigInt(cursor), q.limit + 1);
  const rows = await r.rows(scan);
  const page = rows.slice(0, q.limit);
  // where the next page the same way starts: after the page when more matched, else after the
  // text test's candidates when it stopped at scanLimit, else where the read range stopped
  let onward: string | null = null;
  let scanCapped = false;
  if (rows.length > q.limit) onward = page[page.length - 1]!.id;
  else if (q.filter.text !== null) {
    const c = await r.candidates(scan);
    if (c.n >= q.scanLimit) [onward, scanCapped] = [c.last, true];
  }
  if (onward === null && cut !== null) [onward, scanCapped] = [String(cut), true];
  // the other way: from the page's first row, or from the cursor itself when the page is empty
  let back: string | null = null;
  if (cursor !== null) {
    const from = page[0]?.id ?? (newestFirst ? idBelow(cursor) : idAbove(cursor));
    if (await anyBeyond(r, scanFrom(ids, q, !newestFirst, BigInt(from), 1))) back = from;
  }
  return newestFirst
    ? { jobs: page, older: onward, newer: back, scanCapped }
    : { jobs: page.reverse(), older: back, newer: onward, scanCapped };
}

export async function matchCount(r: MatchReader, p: MatchCountQuery): Promise<MatchCount> {
  const q = checkMatchCount(p);
  const ids = readsByRange(q.filter) ? await r.idRange() : null;
  const { scan, cut } = scanFrom(ids, q, true, null, q.cap + 1);
  const n = await r.count(scan);
  if (q.filter.text !== null || cut !== null) {
    // only some jobs were read: beyond them the count is a lower bound
    const full = n > q.cap || cut !== null || (q.filter.text !== null && (await r.candidates(scan)).n >= q.scanLimit);
    return { count: Math.min(n, q.cap), exact: !full, estimated: false };
  }
  if (n <= q.cap) return { count: n, exact: true, estimated: false };
  const est = await r.estimate(q.filter);
  return est !== null && est > q.cap ? { count: Math.round(est), exact: false, estimated: true } : { count: q.cap, exact: false, estimated: false };
}

/** Each status counted up to `cap`; those within it grouped by queue and type, the others estimated. */
export async function jobSummary(r: MatchReader, p?: JobSummaryQuery): Promise<JobSummary> {
  const { cap } = checkSummary(p);
  const counted = await Promise.all(JOB_STATUSES.map((status) => r.count({ filter: checkJobFilter({ status }), below: null, above: null, newestFirst: true, limit: cap + 1, scanLimit: 0 })));
  const exact = JOB_STATUSES.filter((_, i) => counted[i]! <= cap);
  const [groups, statuses] = await Promise.all([
    exact.length ? r.groups(exact) : Promise.resolve([]),
    Promise.all(JOB_STATUSES.map(async (status, i): Promise<StatusTotal> => {
      const n = counted[i]!;
      if (n <= cap) return { status, count: n, exact: true, estimated: false };
      const est = await r.estimate(checkJobFilter({ status }));
      return est !== null && est > cap ? { status, count: Math.round(est), exact: false, estimated: true } : { status, count: cap, exact: false, estimated: false };
    })),
  ]);
  return { statuses, groups };
}
