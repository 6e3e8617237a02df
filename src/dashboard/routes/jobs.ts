/**
 * The job list and its live rows (GET /api/jobs with the same query). With the client's search,
 * the filter is the URL's (see pages/jobs.ts) and `?q=` holding a job's id goes to that job;
 * without it, the exact status / queue / type filters of listJobs. The page counts its filter;
 * a live refresh reuses that count while it is fresh (count-cache.ts) instead of counting again.
 */
import { SEARCH_READ_LIMIT, SEARCH_SCAN_LIMIT, checkJobFilter, readsByRange } from '../../core/search.js';
import { jobFilterFromQuery } from '../../runtime/job-search.js';
import { CountCache } from '../count-cache.js';
import type { Area, Ctx, Kit } from '../context.js';
import { BadRequest, parseFilters, parseJobId } from '../input.js';
import type { FilterParams, JobQuery, JobsFound } from '../pages/jobs.js';
import { FILTER_PARAMS, jobListPage, jobsLive } from '../pages/jobs.js';

const ID = /^[1-9][0-9]{0,18}$/;

export function parseJobQuery(query: Record<string, string | undefined>): JobQuery {
  const params: FilterParams = {};
  for (const k of FILTER_PARAMS) {
    const v = query[k]?.trim();
    if (v) params[k] = v;
  }
  const cursor = (k: 'before' | 'after') => (query[k] ? parseJobId(query[k]) : undefined);
  const before = cursor('before');
  const after = cursor('after');
  if (before && after) throw new BadRequest('give before or after, not both');
  let limit = 50;
  if (query.limit) {
    if (!/^\d{1,4}$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > 500) throw new BadRequest('limit must be an integer from 1 to 500');
    limit = Number(query.limit);
  }
  return { params, before, after, limit };
}

/** A page of the filter; its count from `counts` when `live` and kept there, else counted (and kept). */
async function find(kit: Kit, f: JobQuery, counts: CountCache, live: boolean): Promise<JobsFound> {
  const { client } = kit;
  if (typeof client.findJobs === 'function') {
    const filter = jobFilterFromQuery(f.params);
    const search = { filter, beforeId: f.before, afterId: f.after, limit: f.limit };
    const bounds = { scanLimit: SEARCH_SCAN_LIMIT, readLimit: SEARCH_READ_LIMIT, byRange: readsByRange(checkJobFilter(filter)) };
    const key = JSON.stringify(filter);
    const kept = live && typeof client.searchJobs === 'function' ? counts.get(key) : undefined;
    if (kept) {
      const page = await client.searchJobs!(search);
      return { jobs: page.jobs, older: page.older, newer: page.newer, count: kept, scanCapped: page.scanCapped, ...bounds };
    }
    const { page, count } = await client.findJobs(search);
    counts.set(key, count);
    return { jobs: page.jobs, older: page.older, newer: page.newer, count, scanCapped: page.scanCapped, ...bounds };
  }
  const { q, key, id, ...exact } = f.params;
  if (q || key || id || f.after) throw new BadRequest('This client cannot search: filter by status, queue and type.');
  const l = parseFilters({ ...exact, before: f.before, limit: String(f.limit) });
  const jobs = await client.listJobs({ status: l.status, queue: l.queue, type: l.type, beforeId: l.before, limit: l.limit });
  const last = jobs[jobs.length - 1];
  return { jobs, older: last && jobs.length === f.limit ? last.id : null, newer: null, scanCapped: false, scanLimit: SEARCH_SCAN_LIMIT, readLimit: SEARCH_READ_LIMIT, byRange: false };
}

const DONE = /^(retry|cancel|delete):(\d{1,9})(:more)?$/;

function doneOf(c: Ctx) {
  const m = DONE.exec(c.req.query('done') ?? '');
  return m ? { action: m[1]!, changed: Number(m[2]), complete: !m[3] } : undefined;
}

export const jobs: Area = (app, kit) => {
  const search = typeof kit.client.findJobs === 'function';
  const bulk = typeof kit.client.previewBulk === 'function' && typeof kit.client.runBulk === 'function';
  const counts = new CountCache();
  app.get(kit.path('/jobs'), async (c) => {
    const f = parseJobQuery(c.req.query());
    const { q } = f.params;
    // a job's id in the search box: the job itself, when there is one
    if (search && q !== undefined && ID.test(q) && Object.keys(f.params).length === 1) {
      const hit = await kit.client.findJobs!({ filter: { id: q }, limit: 1 });
      if (hit.page.jobs.length > 0) return c.redirect(kit.path(`/jobs/${q}`), 303);
    }
    return kit.render(c, jobListPage(kit.page(c), f, await find(kit, f, counts, false), { search, bulk, done: doneOf(c) }));
  });
  app.get(kit.path('/api/jobs'), async (c) => {
    const f = parseJobQuery(c.req.query());
    return kit.json(c, jobsLive(kit.page(c), f, await find(kit, f, counts, true)));
  });
};
