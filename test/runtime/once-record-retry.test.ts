/**
 * ctx.once when the record of a performed effect hits a dropped connection: the effect already
 * happened, so the record is retried (it is fenced by the lease) rather than failing the
 * attempt, whose retry would perform the effect again. Both ways the connection can drop:
 * before the write landed, and after it landed but before the answer came back.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { TransientStorageError } from '../../src/core/index.js';
import type { Storage } from '../../src/core/storage.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Client } from '../../src/runtime/client.js';
import { Worker } from '../../src/runtime/worker.js';
import { LogCapture, STORAGE_KINDS, describeEachKind, openTestStorage, overriding, waitFor } from './support.js';

/**
 * `storage` whose record writes (effects.complete, and completeMany where the adapter has it:
 * the worker batches through that one) fail transiently `times` times, before or after the write.
 */
function flaky(storage: Storage, failures: { left: number }, landed: boolean): Storage {
  const failing =
    <A, R>(write: (a: A) => Promise<R>) =>
    async (a: A): Promise<R> => {
      if (failures.left > 0) {
        failures.left--;
        if (landed) await write(a);
        throw new TransientStorageError('connection terminated unexpectedly (test)');
      }
      return write(a);
    };
  const single = overriding(storage, 'effects', 'complete', (complete) => failing(complete));
  if (!storage.effects.completeMany) return single;
  return overriding(single, 'effects', 'completeMany', (many) => failing(many!));
}

await describeEachKind('ctx.once: recording the effect survives a dropped connection', STORAGE_KINDS, (kind) => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  /** One job of `job`'s type run by a worker whose record writes fail as `failures` says; the job once it ended its attempt. */
  const runOne = async (job: ReturnType<typeof defineJob>, failures: { left: number }, landed: boolean) => {
    const { storage, cleanup } = await openTestStorage(kind);
    cleanups.push(cleanup);
    const log = new LogCapture();
    const worker = new Worker({ storage: flaky(storage, failures, landed), jobs: [job], pollIntervalMs: 20, leaseMs: 10_000, sweeper: false, logger: log.logger });
    await worker.start();
    cleanups.push(() => worker.stop({ deadlineMs: 500 }).then(() => {}));
    const { id } = await new Client({ storage, jobs: [job] }).enqueue(job.type, {});
    const done = await waitFor(async () => {
      const j = await storage.jobs.get({ id });
      return j?.status === 'succeeded' || j?.status === 'failed' ? j : null;
    }, 30_000, 'the job to end its first attempt');
    return { storage, log, done };
  };

  for (const landed of [false, true]) {
    test(`the first record write fails ${landed ? 'after' : 'before'} it landed: one send, one attempt, effect done`, async () => {
      let sends = 0;
      const failures = { left: 2 };
      const job = defineJob({
        type: 'send',
        handler: async (_p: unknown, ctx) => {
          await ctx.once('receipt', () => ++sends);
        },
      });
      const { storage, log, done } = await runOne(job, failures, landed);
      assert.equal(done.status, 'succeeded');
      assert.equal(sends, 1, 'the effect ran once');
      assert.equal(done.attempts, 1, 'no retry was needed');
      assert.deepEqual((await storage.effects.list({ jobId: done.id, limit: 10 })).map((e) => [e.key, e.state, e.result]), [['receipt', 'done', 1]]);
      assert.equal(log.count('effect.unrecorded'), 0);
      assert.equal(failures.left, 0, 'both failing writes were made');
    });
  }

  test('a job with 1,500 effects: records that landed unanswered are found by key, not in a list of the newest', async () => {
    // the first record write (the oldest effects' batch, where records are batched) lands,
    // then the connection drops; 1,000 newer effects of the same job follow it in the ledger
    const failures = { left: 1 };
    const n = 1_500;
    let sends = 0;
    const job = defineJob({
      type: 'fan-out',
      handler: async (_p: unknown, ctx) => {
        await Promise.all(Array.from({ length: n }, (_, i) => ctx.once(`fan-${String(i).padStart(4, '0')}`, () => ++sends)));
      },
    });
    const { log, done } = await runOne(job, failures, true);
    assert.equal(failures.left, 0, 'the failing write was made');
    assert.equal(log.count('effect.unrecorded'), 0, 'every landed record was recognised');
    assert.equal(done.status, 'succeeded');
    assert.equal(done.attempts, 1, 'no retry was needed');
    assert.equal(sends, n, 'each effect ran once');
  });
});
