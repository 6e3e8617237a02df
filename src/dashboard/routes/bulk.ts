/**
 * POST /jobs/bulk: retry, cancel or delete every job matching the posted filter. Without
 * `confirmed=1` it answers with the confirmation (the filter and how many jobs it changes now);
 * confirmed, it runs the action in bounded batches, recorded as this session from this address,
 * and goes back to the list with the totals. The filter is the jobs page's, any of it (a search
 * with text or prefixes is found by jobs.search, see runtime/bulk.ts). No filter at all needs `all=1`.
 */
import { DEFAULT_BULK } from '../../runtime/bulk.js';
import { jobFilterFromQuery } from '../../runtime/job-search.js';
import type { Area } from '../context.js';
import { HttpError } from '../context.js';
import { BadRequest } from '../input.js';
import { operatorOf } from '../operator-ref.js';
import { BULK_ACTIONS, bulkConfirmPage, bulkQuestion } from '../pages/bulk.js';
import type { FilterParams } from '../pages/jobs.js';
import { q } from '../pages/jobs.js';
import { parseJobQuery } from './jobs.js';

export const bulk: Area = (app, kit) => {
  // the script's dialog: the same count and filter as the confirmation page, as JSON
  app.get(kit.path('/api/bulk'), async (c) => {
    const { previewBulk } = kit.client;
    if (typeof previewBulk !== 'function') throw new HttpError(404, 'This client cannot act in bulk.');
    const query = c.req.query();
    const action = BULK_ACTIONS.find((a) => a === query.action);
    if (!action) throw new BadRequest('action must be retry, cancel or delete');
    const params = parseJobQuery(query).params;
    const { count, exact } = await previewBulk.call(kit.client, { action, filter: jobFilterFromQuery(params) });
    return kit.json(c, bulkQuestion({ action, filter: params, count, exact, max: DEFAULT_BULK.max }));
  });

  app.post(kit.path('/jobs/bulk'), async (c) => {
    const { previewBulk, runBulk } = kit.client;
    if (typeof previewBulk !== 'function' || typeof runBulk !== 'function') throw new HttpError(404, 'This client cannot act in bulk.');
    const form = await kit.form(c);
    const action = BULK_ACTIONS.find((a) => a === form.action);
    if (!action) throw new BadRequest('action must be retry, cancel or delete');
    const params: FilterParams = parseJobQuery(form).params;
    const filter = jobFilterFromQuery(params);
    const none = Object.keys(params).length === 0;
    if (form.confirmed !== '1') {
      const { count, exact } = await previewBulk.call(kit.client, { action, filter });
      return kit.render(c, bulkConfirmPage(kit.page(c), { action, filter: params, count, exact, max: DEFAULT_BULK.max }));
    }
    if (none && form.all !== '1') throw new BadRequest('There is no filter, so this would change every job: tick "all jobs" to mean it.');
    const r = await runBulk.call(kit.client, { action, filter, ...operatorOf(kit, c) });
    return kit.back(c, kit.path(`/jobs${q({ ...params, done: `${action}:${r.count}${r.done ? '' : ':more'}` })}`));
  });
};
