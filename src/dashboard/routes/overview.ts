/** The overview page and its live counts (GET /api/overview). */
import type { Area, Kit } from '../context.js';
import type { OverviewData } from '../pages/overview.js';
import { overviewLive, overviewPage } from '../pages/overview.js';

async function load({ client }: Kit): Promise<OverviewData> {
  // the bounded summary where the client has it: fast at a million jobs
  const [summary, workers, unhandled, alerts, queues] = await Promise.all([
    client.summarizeJobs ? client.summarizeJobs() : client.countJobs().then((groups) => ({ groups, statuses: undefined })), client.listWorkers(), client.unhandledJobs(), client.listAlerts?.() ?? [], client.queueStates?.(),
  ]);
  return { counts: summary.groups, totals: summary.statuses, workers, unhandled, alerts, queues, nowMs: Date.now() };
}

export const overview: Area = (app, kit) => {
  for (const p of kit.base ? [kit.base, `${kit.base}/`] : ['/']) app.get(p, async (c) => kit.render(c, overviewPage(kit.page(c), await load(kit))));
  app.get(kit.path('/api/overview'), async (c) => kit.json(c, overviewLive(kit.page(c), await load(kit))));
};
