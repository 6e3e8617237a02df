/** The job list and its live rows (GET /api/jobs with the same filters). */
import type { Area } from '../context.js';
import { parseFilters } from '../input.js';
import { jobListPage, jobsLive } from '../pages/jobs.js';

export const jobs: Area = (app, kit) => {
  const list = (query: Record<string, string>) => {
    const f = parseFilters(query);
    return { f, rows: kit.client.listJobs({ status: f.status, queue: f.queue, type: f.type, beforeId: f.before, limit: f.limit }) };
  };
  app.get(kit.path('/jobs'), async (c) => {
    const { f, rows } = list(c.req.query());
    return kit.render(c, jobListPage(kit.page(c), f, await rows));
  });
  app.get(kit.path('/api/jobs'), async (c) => {
    const { f, rows } = list(c.req.query());
    return kit.json(c, jobsLive(kit.page(c), f, await rows));
  });
};
