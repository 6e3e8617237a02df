/**
 * ctx.once(key, fn), the effect ledger: fn runs only if `key` was never recorded; a later
 * attempt (a retry of the same job, or another job using the key) gets the recorded result.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LeaseLostError } from '../../src/core/index.js';
import type { JobContext } from '../../src/runtime/job-definition.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, deferred, describeEachKind, waitFor } from './support.js';

await describeEachKind('ctx.once', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test("returns fn's result; a second job with the same key skips fn and gets the recorded result", async () => {
    let sends = 0;
    const got: unknown[] = [];
    const { client } = await h.serve([
      defineJob({
        type: 'send-receipt',
        handler: async (p: { order: string }, ctx) => {
          const r = await ctx.once(`receipt:${p.order}`, async () => {
            sends++;
            return { messageId: `m-${sends}`, at: sends };
          });
          got.push(r);
        },
      }),
    ]);
    const a = await client.enqueue('send-receipt', { order: 'o1' });
    await h.waitStatus(a.id, 'succeeded');
    assert.deepEqual(got, [{ messageId: 'm-1', at: 1 }]);
    const b = await client.enqueue('send-receipt', { order: 'o1' });
    await h.waitStatus(b.id, 'succeeded');
    assert.equal(sends, 1, 'fn ran once');
    assert.deepEqual(got[1], { messageId: 'm-1', at: 1 }, 'the second job got the recorded result');
    assert.equal(h.log.count('effect.skipped', b.id), 1);
    // a different key is a different effect
    const c = await client.enqueue('send-receipt', { order: 'o2' });
    await h.waitStatus(c.id, 'succeeded');
    assert.equal(sends, 2);
    assert.deepEqual(got[2], { messageId: 'm-2', at: 2 });
    assert.equal(await h.storage.effects.count(), 2);
    const effects = await h.client.listEffects({ jobId: a.id });
    assert.equal(effects.length, 1);
    assert.equal(effects[0]?.key, 'receipt:o1');
    assert.equal(effects[0]?.state, 'done');
    assert.deepEqual(effects[0]?.result, { messageId: 'm-1', at: 1 });
  });

  test('a retry of the same job skips an effect its failed attempt already performed', async () => {
    let charges = 0;
    const results: unknown[] = [];
    const { client } = await h.serve([
      defineJob({
        type: 'charge',
        maxAttempts: 3,
        retry: { kind: 'fixed', delayMs: 10 },
        handler: async (_p, ctx) => {
          const r = await ctx.once('charge:42', () => ++charges);
          results.push(r);
          if (ctx.attempt === 1) throw new Error('crashed after charging');
        },
      }),
    ]);
    const job = await client.enqueue('charge', {});
    const done = await h.waitStatus(job.id, 'succeeded');
    assert.equal(done.attempts, 2);
    assert.equal(charges, 1);
    assert.deepEqual(results, [1, 1]);
  });

  test('undefined results are recorded as null; a thrown fn records nothing and can run again', async () => {
    let calls = 0;
    const seen: unknown[] = [];
    const { client } = await h.serve([
      defineJob({
        type: 'effects-edge',
        maxAttempts: 2,
        retry: { kind: 'fixed', delayMs: 10 },
        handler: async (_p, ctx) => {
          seen.push(await ctx.once('void-effect', () => undefined));
          seen.push(
            await ctx.once('flaky-effect', () => {
              if (++calls === 1) throw new Error('provider down');
              return 'sent';
            }),
          );
        },
      }),
    ]);
    const job = await client.enqueue('effects-edge', {});
    await h.waitStatus(job.id, 'succeeded');
    assert.equal(calls, 2, 'the failed effect ran again on the retry');
    // first run: fn's own undefined; the replay: the recorded null
    assert.equal(seen.length, 3);
    assert.equal(seen[0] ?? null, null);
    assert.equal(seen[1], null);
    assert.equal(seen[2], 'sent');
  });

  test('once() after the lease is lost throws LeaseLostError and does not run fn', async () => {
    const gate = deferred();
    const started = deferred();
    let ran = false;
    let error: unknown;
    const { client } = await h.serve([
      defineJob({
        type: 'late-effect',
        handler: async (_p, ctx: JobContext) => {
          started.resolve();
          await gate.promise;
          try {
            await ctx.once('late-key', () => (ran = true));
          } catch (e) {
            error = e;
          }
        },
      }),
    ]);
    const job = await client.enqueue('late-effect', {});
    // the handler runs (not only claimed) when the lease is taken from it
    await started.promise;
    const running = await h.job(job.id);
    // another party takes the job over (as a sweeper would): the token changes hands
    const [r] = await h.storage.leases.finish({ items: [
      { id: job.id, leaseToken: running.leaseToken as string, status: 'queued', runAfterMs: 60_000, attempt: { outcome: 'lease_lost' } },
    ] });
    assert.equal(r?.applied, true);
    gate.resolve();
    await waitFor(() => error, 3_000, 'once() to reject');
    assert.ok(error instanceof LeaseLostError);
    assert.equal(ran, false);
    assert.equal((await h.client.listEffects({ jobId: job.id })).length, 0);
  });
});
