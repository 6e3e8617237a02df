/** `leasehold jobs show`: a job's last progress and its result, as text (control characters made visible) and in --json. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { cli, tempDb, withDb } from './support.js';

describe('leasehold jobs show: progress and result', () => {
  const t = tempDb();
  const run = (...args: string[]) => cli(['--db', t.db, ...args]);
  after(() => t.cleanup());
  let id = '';

  before(async () => {
    assert.equal((await run('migrate')).code, 0);
    id = await withDb(t.file, async (s) => {
      const [ins] = await s.jobs.insert({ jobs: [{ queue: 'default', type: 'report', payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 }] });
      const [c] = await s.leases.claim({ workerId: 'w', types: ['report'], queues: null, limit: 1, leaseMs: 30_000 });
      assert.ok(ins && c);
      assert.equal(await s.workflows.progress({ id: c.id, leaseToken: c.leaseToken, value: '{"done":9,"of":9}', note: 'rows\u001b[31m' }), true);
      await s.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status: 'succeeded', result: '{"rows":9,"file":"r.csv"}', attempt: { outcome: 'succeeded' } }] });
      return c.id;
    });
  });

  test('text: the progress with its note and time, and the result as JSON', async () => {
    const r = await run('jobs', 'show', id);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^progress\s+\{"done":9,"of":9\} \(rows\\u001b\[31m\) at \d{4}-\d\d-\d\dT/m);
    assert.match(r.stdout, /^result\s+\{"rows":9,"file":"r\.csv"\}$/m);
  });

  test('--json: the job carries result and progress', async () => {
    const r = await run('jobs', 'show', id, '--json');
    assert.equal(r.code, 0, r.stderr);
    const { job } = JSON.parse(r.stdout) as { job: { result: unknown; progress: { value: unknown; note: string } } };
    assert.deepEqual(job.result, { rows: 9, file: 'r.csv' });
    assert.deepEqual(job.progress.value, { done: 9, of: 9 });
    assert.equal(job.progress.note, 'rows\u001b[31m');
  });
});
