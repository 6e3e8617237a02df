/** Queues: depth, oldest due, throughput, paused state (GET /api/queues), Pause and Resume. */
import type { Area, Kit } from '../context.js';
import { HttpError } from '../context.js';
import { parseName } from '../input.js';
import type { QueuesData } from '../pages/queues.js';
import { THROUGHPUT_WINDOW_MS, queuesLive, queuesPage } from '../pages/queues.js';

async function load({ client }: Kit): Promise<QueuesData> {
  // the bounded summary where the client has it: countJobs groups every job on each poll
  const [summary, health, states, outcomes] = await Promise.all([
    client.summarizeJobs ? client.summarizeJobs() : client.countJobs().then((groups) => ({ groups, statuses: undefined })),
    client.queueHealth?.(), client.queueStates?.(), client.attemptOutcomes?.({ sinceMs: THROUGHPUT_WINDOW_MS }),
  ]);
  const failedExact = summary.statuses?.find((t) => t.status === 'failed')?.exact ?? true;
  return { counts: summary.groups, failedExact, health, states, outcomes, nowMs: Date.now() };
}

export const queues: Area = (app, kit) => {
  app.get(kit.path('/queues'), async (c) => kit.render(c, queuesPage(kit.page(c), await load(kit), c.req.query('done'))));
  app.get(kit.path('/api/queues'), async (c) => kit.json(c, queuesLive(kit.page(c), await load(kit))));

  for (const verb of ['pause', 'resume'] as const) {
    app.post(kit.path(`/queues/${verb}`), async (c) => {
      const act = verb === 'pause' ? kit.client.pauseQueue : kit.client.resumeQueue;
      if (typeof act !== 'function') throw new HttpError(404, 'This client cannot pause queues.');
      const queue = parseName('queue', (await kit.form(c)).queue);
      await act.call(kit.client, queue);
      return kit.back(c, kit.path(`/queues?done=${verb === 'pause' ? 'paused' : 'resumed'}`));
    });
  }
};
