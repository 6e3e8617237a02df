/**
 * ctx.once checks the lease in the same synchronous step that calls fn. A process can stall
 * (SIGSTOP, a long GC, other jobs' synchronous work) right after a check that found the lease
 * held; if a turn of the event loop separated that check from fn, fn would start after the
 * rescue. Here the "stall" is a jump of the monotonic clock right after the first lease check
 * that follows the reserve, and the rescue happens behind the worker's back meanwhile.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { EffectParams, EffectReservation, Storage } from '../../src/core/storage.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { type EdgeKind, edgeSkip, openEdge } from './edge-kinds.js';
import type { Harness } from './support.js';

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

/** `storage` whose first effect reserve (alone or batched) runs `then` after it landed, before it is answered. */
function onFirstReserve(storage: Storage, then: (p: EffectParams) => Promise<void>): Storage {
  let first = true;
  const hook = async <T>(p: EffectParams, answer: T): Promise<T> => {
    if (first) {
      first = false;
      await then(p);
    }
    return answer;
  };
  return new Proxy(storage, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop === 'reserveEffect') return async (p: EffectParams) => hook(p, await target.reserveEffect(p));
      if (prop === 'reserveEffects' && target.reserveEffects) {
        return async (ps: EffectParams[]) => hook(ps[0] as EffectParams, await (target.reserveEffects as (x: EffectParams[]) => Promise<EffectReservation[]>).call(target, ps));
      }
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

for (const kind of ['memory', 'sqlite', 'postgres', 'mysql'] as EdgeKind[]) {
  const suite = `ctx.once: the lease check and fn in one step (${kind})`;
  const skip = await edgeSkip(kind, suite);
  describe(suite, { skip }, () => {
    let h: Harness;
    let close: () => Promise<void>;
    before(async () => {
      ({ h, close } = await openEdge(kind));
    });
    after(() => close());

    test('a stall right after a check that found the lease held does not let fn run after the rescue', async () => {
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
          const [r] = await h.storage.finishJobs([{ id: p.jobId, leaseToken: p.leaseToken, status: 'failed', runAfterMs: 0, attempt: { outcome: 'lease_expired' } }]);
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
}
