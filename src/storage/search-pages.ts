/**
 * jobs.search and jobs.countMatching, once for every adapter: the pages, cursors and counts are
 * decided here from a few bounded reads each adapter answers in its own SQL (`MatchReader`).
 *
 * A scan walks the jobs matching the filter's exact parts in id order from a cursor (newest
 * first toward older jobs, oldest first toward newer ones). With `text`, the text test is
 * applied to the first `scanLimit` of them only: a keystroke never reads more rows than that.
 */
import { checkJobFilter, checkJobSearch, checkMatchCount, checkSummary, idAbove, idBelow } from '../core/search.js';
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
}

/** Whether anything matches beyond the scan's cursor: a match, or (with text) a full window of candidates to look through. */
async function anyBeyond(r: MatchReader, s: MatchScan): Promise<boolean> {
  if ((await r.rows({ ...s, limit: 1 })).length > 0) return true;
  return s.filter.text !== null && (await r.candidates(s)).n >= s.scanLimit;
}

export async function searchPage(r: MatchReader, p: JobSearch): Promise<JobSearchPage> {
  const q = checkJobSearch(p);
  const newestFirst = q.afterId === null;
  const scan: MatchScan = { filter: q.filter, below: q.beforeId, above: q.afterId, newestFirst, limit: q.limit + 1, scanLimit: q.scanLimit };
  const rows = await r.rows(scan);
  const page = rows.slice(0, q.limit);
  // where the next page the same way starts: after the page when more matched, else after the
  // candidates when the text test stopped at scanLimit, else nowhere
  let onward: string | null = null;
  let scanCapped = false;
  if (rows.length > q.limit) onward = page[page.length - 1]!.id;
  else if (q.filter.text !== null) {
    const c = await r.candidates(scan);
    if (c.n >= q.scanLimit && c.last !== null) [onward, scanCapped] = [c.last, true];
  }
  // the other way: from the page's first row, or from the cursor itself when the page is empty
  const cursor = newestFirst ? q.beforeId : q.afterId;
  let back: string | null = null;
  if (cursor !== null) {
    const from = page[0]?.id ?? (newestFirst ? idBelow(cursor) : idAbove(cursor));
    const probe: MatchScan = { ...scan, below: newestFirst ? null : from, above: newestFirst ? from : null, newestFirst: !newestFirst };
    if (await anyBeyond(r, probe)) back = from;
  }
  return newestFirst
    ? { jobs: page, older: onward, newer: back, scanCapped }
    : { jobs: page.reverse(), older: back, newer: onward, scanCapped };
}

export async function matchCount(r: MatchReader, p: MatchCountQuery): Promise<MatchCount> {
  const q = checkMatchCount(p);
  const scan: MatchScan = { filter: q.filter, below: null, above: null, newestFirst: true, limit: q.cap + 1, scanLimit: q.scanLimit };
  const n = await r.count(scan);
  if (q.filter.text !== null) {
    // the text test saw only the newest candidates: beyond them the count is a lower bound
    const full = n > q.cap || (await r.candidates(scan)).n >= q.scanLimit;
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
