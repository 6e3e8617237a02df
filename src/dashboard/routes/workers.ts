/** Workers and what each runs now (GET /api/workers): one bounded list of running jobs, grouped by lease holder. */
import type { Area, Kit } from '../context.js';
import type { WorkersData } from '../pages/workers.js';
import { RUNNING_LIMIT, workersLive, workersPage } from '../pages/workers.js';

async function load({ client }: Kit): Promise<WorkersData> {
  const [workers, running] = await Promise.all([client.listWorkers(), client.listJobs({ status: 'running', limit: RUNNING_LIMIT })]);
  return { workers, running, nowMs: Date.now() };
}

export const workers: Area = (app, kit) => {
  app.get(kit.path('/workers'), async (c) => kit.render(c, workersPage(kit.page(c), await load(kit))));
  app.get(kit.path('/api/workers'), async (c) => kit.json(c, workersLive(kit.page(c), await load(kit))));
};
