/** client.batches with running workers: the callback runs once, after the last member, with the counts; a closed batch takes no members. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LeaseholdError, PermanentFailure, ValidationError } from '../../src/core/index.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, describeEachKind, waitFor } from './support.js';

await describeEachKind('client.batches', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('the callback runs once, after every member ended, with the counts; members may be added until it is closed', async () => {
    const seen: { report: string; batch: { total: number; succeeded: number; dead: number } }[] = [];
    const ended: string[] = [];
    const member = defineJob({ type: 'bt-member', handler: (p: { n: number }, ctx) => {
      ended.push(ctx.job.id);
      if (p.n % 4 === 0) throw new PermanentFailure('multiple of four');
    } });
    const done = defineJob({ type: 'bt-done', handler: (p: (typeof seen)[number]) => void seen.push(p) });
    const { client } = await h.serve([member, done], { concurrency: 4 });
    const batch = await client.batches.create({ onComplete: { type: 'bt-done', payload: { report: 'nightly' } } });
    const first = await client.batches.add(batch.id, Array.from({ length: 6 }, (_, n) => ({ type: 'bt-member' as const, payload: { n } })));
    assert.deepEqual(first.map((j) => j.batchId), first.map(() => batch.id));
    await h.waitStatus(first[5]!.id, 'succeeded');
    await client.batches.add(batch.id, Array.from({ length: 6 }, (_, n) => ({ type: 'bt-member' as const, payload: { n: n + 6 } })));
    await client.batches.close(batch.id);
    await assert.rejects(client.batches.add(batch.id, [{ type: 'bt-member', payload: { n: 99 } }]), (e: unknown) => e instanceof LeaseholdError && e.code === 'INVALID_STATE');
    const cbId = await waitFor(async () => (await h.storage.jobs.list({ type: 'bt-done', limit: 5 }))[0]?.id, 10_000, 'the callback job');
    const cb = await h.waitStatus(cbId, 'succeeded');
    assert.equal(seen.length, 1);
    assert.deepEqual(seen[0], { report: 'nightly', batch: { id: batch.id, total: 12, succeeded: 9, dead: 3, cancelled: 0 } });
    assert.equal(ended.length, 12, 'every member ran (none after close)');
    const members = await h.storage.jobs.list({ type: 'bt-member', limit: 50 });
    const lastEnd = Math.max(...members.map((m) => m.finishedAt!.getTime()));
    assert.ok(cb.createdAt.getTime() >= lastEnd, 'enqueued by the last member to end');
    assert.equal((await client.batches.get(batch.id))!.state, 'done');
  });

  test('a callback is checked before anything is written', async () => {
    const client = h.clientWith([defineJob({ type: 'bt-cb', handler: () => {} })]);
    await assert.rejects(client.batches.create({ onComplete: { type: 'bt-cb', payload: [1] as unknown as object } }), ValidationError);
    await assert.rejects(client.batches.create({ onComplete: { type: 'nope' as 'bt-cb', payload: {} } }), ValidationError);
    await assert.rejects(client.batches.close('999999'), (e: unknown) => e instanceof LeaseholdError && e.code === 'INVALID_STATE');
  });
});
