/**
 * One job: its page, its live parts (GET /api/jobs/:id), Retry and Cancel (Cancel asks first),
 * recorded in its history as this session from this address when the client can record them.
 */
import type { Area, Ctx, Kit } from '../context.js';
import { parseJobId } from '../input.js';
import { operatorOf } from '../operator-ref.js';
import type { JobData } from '../pages/job.js';
import { CANCELLABLE, cancelQuestion, jobDetailPage, jobLive } from '../pages/job.js';

async function load({ client }: Kit, id: string): Promise<JobData> {
  const job = await client.getJob(id);
  const [attempts, effects, events, edges, batch] = await Promise.all([
    client.listAttempts(id), client.listEffects({ jobId: id, limit: 100 }), client.jobEvents?.(id) ?? [],
    client.jobDependencies?.(id) ?? null, job.batchId === undefined ? null : (client.batches?.get(job.batchId) ?? null),
  ]);
  return { job, attempts, effects, events, edges, batch, nowMs: Date.now() };
}

export const job: Area = (app, kit) => {
  const id = (c: Ctx) => parseJobId(c.req.param('id'));
  app.get(kit.path('/jobs/:id'), async (c) => kit.render(c, jobDetailPage(kit.page(c), await load(kit, id(c)), c.req.query('done'))));
  app.get(kit.path('/api/jobs/:id'), async (c) => kit.json(c, jobLive(kit.page(c), await load(kit, id(c)))));

  app.post(kit.path('/jobs/:id/retry'), async (c) => {
    const jobId = id(c);
    const { retryJob } = kit.client;
    await (retryJob ? retryJob.call(kit.client, jobId, operatorOf(kit, c)) : kit.client.retryNow(jobId));
    return kit.back(c, kit.path(`/jobs/${jobId}?done=retried`));
  });

  app.post(kit.path('/jobs/:id/cancel'), async (c) => {
    const jobId = id(c);
    const job = await kit.client.getJob(jobId);
    // a job that cannot be cancelled gets its 409 at once, not a question first
    const ask = CANCELLABLE.has(job.status) && await kit.confirm(c, { title: `Cancel job ${job.id}?`, question: cancelQuestion(job), label: 'Cancel the job', back: kit.path(`/jobs/${job.id}`) });
    if (ask) return ask;
    const { cancelJob } = kit.client;
    await (cancelJob ? cancelJob.call(kit.client, jobId, operatorOf(kit, c)) : kit.client.cancel(jobId));
    return kit.back(c, kit.path(`/jobs/${jobId}?done=cancelled`));
  });
};
