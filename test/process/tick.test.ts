/**
 * Cron mode: `leasehold tick --max-seconds N` runs due jobs until none are left and exits 0;
 * with more work than its budget it stops at the budget (plus a small margin) and leaves the
 * rest queued — due, not failed, no attempt burnt.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { HANDLERS, Sandbox, killAll } from './support.js';

after(killAll);

const MARGIN_MS = 2_500;

function tickArgs(maxSeconds: number, concurrency: number): string[] {
  return ['tick', '--handlers', HANDLERS, '--max-seconds', String(maxSeconds), '--concurrency', String(concurrency), '--lease', '1s', '--poll', '100ms'];
}

describe('process: leasehold tick', () => {
  it('drains the due jobs and exits 0 well before its budget', { timeout: 60_000 }, async () => {
    const sb = await Sandbox.create();
    try {
      const due = await sb.client.enqueueMany(Array.from({ length: 30 }, (_, i) => ({ type: 'work', payload: { sleepMs: 20, effectKey: `tick-${i}` } })));
      // Not due within this tick: must be left alone.
      const [later] = await sb.client.enqueueMany([{ type: 'work', payload: {}, options: { delayMs: 60_000 } }]);

      const t = sb.cli(tickArgs(5, 4));
      const exit = await t.waitExit(20_000);
      assert.equal(exit.code, 0, t.tail());
      const started = await t.waitFor('worker.started');
      assert.ok(exit.at - started.time < 5_000, `idle exit, not the budget: ${exit.at - started.time} ms`);
      const doneLine = await t.waitFor('tick.done');
      assert.equal(doneLine.timedOut, false);
      assert.equal(doneLine.processed, 30);

      for (const j of due) assert.equal((await sb.storage.jobs.get({ id: j.id }))?.status, 'succeeded', `job ${j.id}`);
      const l = await sb.storage.jobs.get({ id: later!.id });
      assert.equal(l?.status, 'queued');
      assert.equal(l?.attempts, 0);
      assert.equal(await sb.storage.effects.count(), 30);
      assert.equal(sb.outboxLines().length, 30);
      assert.deepEqual(await sb.storage.workers.list(), [], 'the tick deregistered itself');
    } finally {
      await killAll();
      await sb.close();
    }
  });

  it('with more work than the budget, exits by the budget and leaves the rest queued', { timeout: 60_000 }, async () => {
    const sb = await Sandbox.create();
    try {
      // 12 jobs of 1.5 s at concurrency 2 need ~9 s; the budget is 2 s.
      const jobs = await sb.client.enqueueMany(Array.from({ length: 12 }, (_, i) => ({ type: 'work', payload: { sleepMs: 1_500, effectKey: `slow-${i}` } })));
      const budgetMs = 2_000;

      const t = sb.cli(tickArgs(budgetMs / 1000, 2));
      const exit = await t.waitExit(20_000);
      assert.equal(exit.code, 0, t.tail());
      const started = await t.waitFor('worker.started');
      const tookMs = exit.at - started.time;
      assert.ok(tookMs <= budgetMs + MARGIN_MS, `tick ran ${tookMs} ms for a ${budgetMs} ms budget (+${MARGIN_MS} ms margin)`);
      const doneLine = await t.waitFor('tick.done');
      assert.equal(doneLine.timedOut, true);

      const rows = await Promise.all(jobs.map((j) => sb.storage.jobs.get({ id: j.id })));
      const succeeded = rows.filter((r) => r?.status === 'succeeded');
      const rest = rows.filter((r) => r?.status !== 'succeeded');
      assert.ok(succeeded.length <= 4, `at most ~one round of 2 fits in the budget: ${succeeded.length}`);
      assert.ok(rest.length >= 8);
      const now = Date.now();
      for (const r of rest) {
        assert.equal(r?.status, 'queued', `job ${r?.id} is ${r?.status}, not queued`);
        assert.equal(r?.attempts, 0, `job ${r?.id}: no attempt counted`);
        assert.equal(r?.lastErrorCode, null);
        assert.ok(r!.runAt.getTime() <= now, `job ${r?.id} is due`);
        assert.equal(r?.lockedBy, null);
      }
      // Whatever was running at the budget was handed back, not failed.
      const outcomes = (await Promise.all(rest.map((r) => sb.storage.attempts.list({ jobId: r!.id })))).flat().map((a) => a.outcome);
      assert.ok(outcomes.every((o) => o === 'handed_back'), JSON.stringify(outcomes));
      assert.ok(outcomes.length >= 1, 'jobs were running at the budget and were handed back');
      assert.equal(sb.outboxLines().length, succeeded.length, 'sends only for finished jobs');

      // The next tick picks up where this one stopped.
      const t2 = sb.cli(tickArgs(5, 12));
      assert.equal((await t2.waitExit(20_000)).code, 0, t2.tail());
      assert.equal((await sb.statusCounts()).succeeded, 12);
      assert.equal(sb.outboxLines().length, 12);
    } finally {
      await killAll();
      await sb.close();
    }
  });
});
