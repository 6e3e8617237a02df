/** The overview page and its live counts (GET /api/overview). */
import type { Area, Kit } from '../context.js';
import type { OverviewData } from '../pages/overview.js';
import { overviewLive, overviewPage } from '../pages/overview.js';

async function load({ client }: Kit): Promise<OverviewData> {
  const [counts, workers, unhandled, alerts, queues] = await Promise.all([
    client.countJobs(), client.listWorkers(), client.unhandledJobs(), client.listAlerts?.() ?? [], client.queueStates?.(),
  ]);
  return { counts, workers, unhandled, alerts, queues, nowMs: Date.now() };
}

export const overview: Area = (app, kit) => {
  for (const p of kit.base ? [kit.base, `${kit.base}/`] : ['/']) app.get(p, async (c) => kit.render(c, overviewPage(kit.page(c), await load(kit))));
  app.get(kit.path('/api/overview'), async (c) => kit.json(c, overviewLive(kit.page(c), await load(kit))));
};
