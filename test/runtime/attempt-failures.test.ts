/**
 * When an attempt's own bookkeeping fails, the worker goes on: a finish the completer gives up
 * on is logged (job.finish_failed) and its lease left to lapse; an internal error while an
 * outcome is decided, or a handler's result that cannot be read, is logged (job.crashed).
 * Either way the attempt ends as 'lost', its slot is free and the next job runs.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, describeEachKind, overriding, waitFor } from './support.js';

await describeEachKind('attempts whose outcome cannot be written', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('a finish that keeps failing: job.finish_failed, the slot is freed, the next job runs, the lease is left to lapse', async () => {
    const storage = overriding(h.storage, 'leases', 'finish', () => () => Promise.reject(new Error('connection refused')));
    const ran: string[] = [];
    const def = defineJob({ type: 'unrecordable', handler: (_p, ctx) => void ran.push(ctx.job.id) });
    const { client, worker } = await h.serve([def], { storage, concurrency: 1 });
    const a = await client.enqueue('unrecordable', {});
    const b = await client.enqueue('unrecordable', {});
    // one slot: the second handler runs only because the first gave its slot back
    await waitFor(() => ran.length === 2, 3_000, 'both handlers to run on one slot');
    // the completer retries for about 4 s before it gives up
    await h.waitEvent('job.finish_failed', a.id, 8_000);
    await h.waitEvent('job.finish_failed', b.id, 8_000);
    await waitFor(() => worker.inFlight === 0, 1_000, 'both attempts to end');
    for (const id of [a.id, b.id]) assert.equal((await h.job(id)).status, 'running', 'nothing was written: the lease lapses and the sweeper retries');
  });

  test('an internal error while deciding an outcome: job.crashed, the slot is freed, the next job runs', async () => {
    let armed = false;
    // the definition's retry policy is read when an outcome is decided: armed, that read throws
    const def = defineJob({
      type: 'crashes-on-record',
      maxAttempts: 3,
      get retry() {
        if (armed) throw new Error('policy store unreadable');
        return undefined;
      },
      handler: (p: { fail: boolean }) => {
        armed = p.fail;
        if (p.fail) throw new Error('handler failed');
      },
    });
    const { client, worker } = await h.serve([def], { concurrency: 1 });
    const bad = await client.enqueue('crashes-on-record', { fail: true });
    const crashed = await h.waitEvent('job.crashed', bad.id, 3_000);
    assert.match(String(crashed.err), /policy store unreadable/);
    const good = await client.enqueue('crashes-on-record', { fail: false });
    await h.waitStatus(good.id, 'succeeded', 3_000);
    await waitFor(() => worker.inFlight === 0, 1_000, 'both attempts to end');
    assert.equal((await h.job(bad.id)).status, 'running', 'no outcome was written for the crashed attempt');
  });

  test('a handler result that throws when inspected: job.crashed, nothing unhandled, the worker goes on', async () => {
    // not a thenable, but any other property read throws: telling a success from a
    // snooze/cancel/fail outcome throws inside the attempt
    const proxy = new Proxy({}, {
      get: (_t, prop) => {
        if (prop === 'then') return undefined;
        throw new Error('unreadable result');
      },
    });
    const def = defineJob({ type: 'odd-result', maxAttempts: 1, handler: (p: { odd: boolean }) => (p.odd ? proxy : undefined) });
    const { client, worker } = await h.serve([def], { concurrency: 1 });
    const odd = await client.enqueue('odd-result', { odd: true });
    const crashed = await h.waitEvent('job.crashed', odd.id, 3_000);
    assert.match(String(crashed.err), /unreadable result/);
    const plain = await client.enqueue('odd-result', { odd: false });
    await h.waitStatus(plain.id, 'succeeded', 3_000);
    await waitFor(() => worker.inFlight === 0, 1_000, 'both attempts to end');
  });
});
