/**
 * ctx.once checks the lease in the same synchronous step that calls fn. A process can stall
 * (SIGSTOP, a long GC, other jobs' synchronous work) right after a check that found the lease
 * held; if a turn of the event loop separated that check from fn, fn would start after the
 * rescue. Here the "stall" is a jump of the monotonic clock right after the first lease check
 * that follows the reserve, and the rescue happens behind the worker's back meanwhile.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defineJob } from '../../src/runtime/job-definition.js';
import { describeEachHarness, onFirstReserve } from './support.js';

const LEASE_MS = 60_000;

/** performance.now() that runs `jump` ms ahead from its second reading after `arm()` on. */
function jumpingClock(jump: number): { arm: () => void; restore: () => void } {
  const real = performance.now.bind(performance);
  let readsAfterArm = -1;
  performance.now = () => {
    if (readsAfterArm >= 0) readsAfterArm++;
    return real() + (readsAfterArm >= 2 ? jump : 0);
  };
  return { arm: () => void (readsAfterArm = 0), restore: () => void (performance.now = real) };
}

await describeEachHarness('ctx.once: the lease check and fn in one step', (harness) => {
  test('a stall right after a check that found the lease held does not let fn run after the rescue', async () => {
    const h = harness();
    const type = 'stall-once';
    let calls = 0;
    const outcomes: string[] = [];
    const def = defineJob({
      type,
      timeoutMs: 600_000,
      maxAttempts: 3,
      retry: { kind: 'fixed', delayMs: 0 },
      handler: async (_p, ctx) => {
        try {
          await ctx.once('send', () => void calls++);
          outcomes.push(`${ctx.attempt}:ok`);
        } catch (e) {
          outcomes.push(`${ctx.attempt}:${(e as { code?: string }).code}`);
          throw e;
        }
      },
    });
    const clock = jumpingClock(LEASE_MS);
    try {
      const storage = onFirstReserve(h.storage, async (p) => {
        // another process rescues the job while this one is about to stall
        const [r] = await h.storage.leases.finish({ items: [{ id: p.jobId, leaseToken: p.leaseToken, status: 'failed', runAfterMs: 0, attempt: { outcome: 'lease_expired' } }] });
        assert.equal(r?.applied, true);
        clock.arm();
      });
      const { client } = await h.serve([def], { storage, concurrency: 1, leaseMs: LEASE_MS });
      const job = await client.enqueue(type, {});
      await h.waitStatus(job.id, 'succeeded', 10_000);
    } finally {
      clock.restore();
    }
    assert.equal(calls, 1, `fn ran once: ${outcomes.join(', ')}`);
    assert.deepEqual(outcomes, ['1:LEASE_LOST', '2:ok']);
  });
});
