/**
 * Idempotency keys: a duplicate key returns the existing job (created=false), never a second
 * row — across calls, inside one enqueueMany batch, and after the first job has finished.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, describeEachKind } from './support.js';

await describeEachKind('idempotency keys', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('enqueue twice with the same key → same id, created=false, one row', async () => {
    const first = await h.client.enqueue('send', { to: 'a' }, { idempotencyKey: 'order-1' });
    const second = await h.client.enqueue('send', { to: 'DIFFERENT' }, { idempotencyKey: 'order-1', delayMs: 60_000 });
    assert.equal(first.created, true);
    assert.equal(second.created, false);
    assert.equal(second.id, first.id);
    assert.deepEqual(second.payload, { to: 'a' }, 'the existing job is returned unchanged');
    assert.equal(second.idempotencyKey, 'order-1');
    const rows = await h.client.listJobs({ type: 'send' });
    assert.equal(rows.length, 1);
    // a different key is a different job
    const third = await h.client.enqueue('send', { to: 'a' }, { idempotencyKey: 'order-2' });
    assert.equal(third.created, true);
    assert.notEqual(third.id, first.id);
    assert.equal((await h.client.listJobs({ type: 'send' })).length, 2);
  });

  test('the same key twice inside one enqueueMany batch → one row, both results point to it', async () => {
    const res = await h.client.enqueueMany([
      { type: 'batch', payload: { n: 1 }, options: { idempotencyKey: 'b-1' } },
      { type: 'batch', payload: { n: 2 }, options: { idempotencyKey: 'b-1' } },
      { type: 'batch', payload: { n: 3 } },
    ]);
    assert.deepEqual(res.map((r) => r.created), [true, false, true]);
    assert.equal(res[1]?.id, res[0]?.id);
    assert.equal((await h.client.listJobs({ type: 'batch' })).length, 2);
  });

  test('a key still dedupes after its job has succeeded', async () => {
    let runs = 0;
    const { client } = await h.serve([defineJob({ type: 'once-only', handler: () => void runs++ })]);
    const first = await client.enqueue('once-only', {}, { idempotencyKey: 'k-done' });
    await h.waitStatus(first.id, 'succeeded');
    const again = await client.enqueue('once-only', {}, { idempotencyKey: 'k-done' });
    assert.equal(again.created, false);
    assert.equal(again.id, first.id);
    assert.equal(again.status, 'succeeded');
    assert.equal((await h.client.listJobs({ type: 'once-only' })).length, 1);
    assert.equal(runs, 1);
  });

  test('concurrent enqueues with one key → one row', async () => {
    const all = await Promise.all(Array.from({ length: 10 }, (_, i) => h.client.enqueue('race', { i }, { idempotencyKey: 'same' })));
    assert.equal(new Set(all.map((j) => j.id)).size, 1);
    assert.equal(all.filter((j) => j.created).length, 1);
    assert.equal((await h.client.listJobs({ type: 'race' })).length, 1);
  });
});
