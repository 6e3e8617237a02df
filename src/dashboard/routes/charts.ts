/** GET /charts?range=hour|day|week: the attempt history's charts, drawn on the server. */
import type { ChartRange } from '../../core/charts.js';
import type { Area } from '../context.js';
import { HttpError } from '../context.js';
import { BadRequest } from '../input.js';
import { RANGES, chartsPage } from '../pages/charts.js';

export const charts: Area = (app, kit) => {
  app.get(kit.path('/charts'), async (c) => {
    const { attemptChart } = kit.client;
    if (typeof attemptChart !== 'function') throw new HttpError(404, 'This client cannot draw charts.');
    const raw = c.req.query('range') || 'hour';
    const range = RANGES.find((r) => r === raw);
    if (!range) throw new BadRequest(`range must be one of ${RANGES.join(', ')}`);
    return kit.render(c, chartsPage(kit.page(c), range as ChartRange, await attemptChart.call(kit.client, { range })));
  });
};
