/**
 * Workers claim only the types (and queues) they have handlers for. A due job no live worker
 * can handle stays queued — never failed for it — and is reported: client.unhandledJobs() and
 * the sweeper's 'jobs.unhandled' log line.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, describeEachKind } from './support.js';

await describeEachKind('jobs no worker handles', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('stay queued (attempts 0) while handled ones run; reported by unhandledJobs() and jobs.unhandled', async () => {
    const ran: string[] = [];
    const handled = defineJob({ type: 'handled', handler: (p: { n: number }) => void ran.push(`handled:${p.n}`) });
    // The client knows both types (e.g. a web app); the only worker handles one.
    const client = h.clientWith([handled, defineJob({ type: 'orphan', handler: () => void ran.push('orphan') })]);
    const orphan = await client.enqueue('orphan', { x: 1 });
    const a = await client.enqueue('handled', { n: 1 });
    // a second queue the worker does not serve: also unhandled, even for a handled type
    const elsewhere = await client.enqueue('handled', { n: 99 }, { queue: 'elsewhere' });

    const worker = await h.worker([handled], { queues: ['default'], sweeper: true, sweepIntervalMs: 30 });
    await h.waitStatus(a.id, 'succeeded');
    // more polls go by: a later job is claimed and run, the orphan still is not
    const b = await client.enqueue('handled', { n: 2 });
    await h.waitStatus(b.id, 'succeeded');

    const warn = await h.waitEvent('jobs.unhandled', undefined, 3_000);
    assert.equal(warn.level, 40);
    assert.equal(warn.capped, false, 'every due job was read');
    const reported = warn.unhandled as { type: string; queue: string; due: number }[];
    assert.deepEqual(
      [...reported].sort((x, y) => x.type.localeCompare(y.type)),
      [
        { type: 'handled', queue: 'elsewhere', due: 1 },
        { type: 'orphan', queue: 'default', due: 1 },
      ],
    );

    for (const id of [orphan.id, elsewhere.id]) {
      const row = await h.job(id);
      assert.equal(row.status, 'queued');
      assert.equal(row.attempts, 0);
      assert.equal(row.lastErrorCode, null);
      assert.deepEqual(await h.client.listAttempts(id), []);
    }
    assert.deepEqual(ran.sort(), ['handled:1', 'handled:2']);

    const unhandled = await h.client.unhandledJobs();
    assert.deepEqual(
      [...unhandled].sort((x, y) => x.type.localeCompare(y.type)),
      [
        { type: 'handled', queue: 'elsewhere', due: 1, capped: false },
        { type: 'orphan', queue: 'default', due: 1, capped: false },
      ],
    );

    // Once a worker for it appears, the orphan runs and is no longer reported.
    await h.worker([defineJob({ type: 'orphan', handler: () => void ran.push('orphan') })]);
    await h.waitStatus(orphan.id, 'succeeded');
    assert.deepEqual(await h.client.unhandledJobs(), [{ type: 'handled', queue: 'elsewhere', due: 1, capped: false }]);
    await worker.stop();
  });

  test('a job not yet due is not reported as unhandled', async () => {
    const other = await Harness.open(kind);
    try {
      await other.client.enqueue('nobody-handles', {}, { delayMs: 60_000 });
      assert.deepEqual(await other.client.unhandledJobs(), []);
      await other.client.enqueue('nobody-handles', {});
      assert.deepEqual(await other.client.unhandledJobs(), [{ type: 'nobody-handles', queue: 'default', due: 1, capped: false }]);
    } finally {
      await other.close();
    }
  });
});
