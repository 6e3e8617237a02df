/** Schedules with their next five fires (GET /api/schedules); Enable, Disable and Run now. */
import type { Area, Kit } from '../context.js';
import { HttpError } from '../context.js';
import { parseName } from '../input.js';
import type { SchedulesData } from '../pages/schedules.js';
import { schedulesLive, schedulesPage } from '../pages/schedules.js';

async function load({ client }: Kit): Promise<SchedulesData> {
  if (typeof client.listSchedules !== 'function') throw new HttpError(404, 'This client has no schedules API.');
  const actions = typeof client.setScheduleEnabled === 'function' && typeof client.runScheduleNow === 'function';
  return { schedules: await client.listSchedules(), actions, nowMs: Date.now() };
}

export const schedules: Area = (app, kit) => {
  app.get(kit.path('/schedules'), async (c) => kit.render(c, schedulesPage(kit.page(c), await load(kit), { done: c.req.query('done'), job: c.req.query('job') })));
  app.get(kit.path('/api/schedules'), async (c) => kit.json(c, schedulesLive(kit.page(c), await load(kit))));

  for (const verb of ['enable', 'disable'] as const) {
    app.post(kit.path(`/schedules/${verb}`), async (c) => {
      const { setScheduleEnabled } = kit.client;
      if (typeof setScheduleEnabled !== 'function') throw new HttpError(404, 'This client cannot change schedules.');
      await setScheduleEnabled.call(kit.client, parseName('schedule', (await kit.form(c)).name), verb === 'enable');
      return kit.back(c, kit.path(`/schedules?done=${verb}d`));
    });
  }
  app.post(kit.path('/schedules/run'), async (c) => {
    const { runScheduleNow } = kit.client;
    if (typeof runScheduleNow !== 'function') throw new HttpError(404, 'This client cannot run schedules.');
    const job = await runScheduleNow.call(kit.client, parseName('schedule', (await kit.form(c)).name));
    return kit.back(c, kit.path(`/schedules?done=ran&job=${job.id}`));
  });
};
