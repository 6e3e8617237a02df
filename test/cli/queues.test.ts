/**
 * `leasehold queues pause|resume|list` against a SQLite file: a pause is stored for every
 * process (another connection's claim takes nothing from the queue), list shows state and
 * counts, resume makes the jobs claimable again. Also: what a handler wrote as its error reaches
 * `jobs list` / `jobs show` with its control characters made visible, never obeyed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { cli, tempDb, withDb } from './support.js';

describe('leasehold queues', () => {
  const t = tempDb();
  const run = (...args: string[]) => cli(['--db', t.db, ...args]);
  after(() => t.cleanup());
  before(async () => {
    assert.equal((await run('migrate')).code, 0);
    for (const q of ['mail', 'mail', 'reports']) assert.equal((await run('enqueue', 'work', '{}', '--queue', q)).code, 0);
  });

  test('pause stops every claim from the queue; list shows it; resume brings the jobs back', async () => {
    const p = await run('queues', 'pause', 'mail');
    assert.equal(p.code, 0, p.stderr);
    assert.match(p.stdout, /queue mail paused/);
    const claimed = await withDb(t.file, (s) => s.leases.claim({ workerId: 'w', types: ['work'], queues: null, limit: 10, leaseMs: 60_000 }));
    assert.deepEqual(claimed.map((j) => j.queue), ['reports'], 'only the active queue is claimed, from another process');
    const l = await run('queues', 'list', '--json');
    assert.equal(l.code, 0, l.stderr);
    const lines = JSON.parse(l.stdout) as { queue: string; paused: boolean; due: number; running: number }[];
    assert.deepEqual(
      lines.map((x) => [x.queue, x.paused, x.due, x.running]),
      [['mail', true, 2, 0], ['reports', false, 0, 1]],
    );
    assert.match((await run('queues', 'list')).stdout, /mail\s+paused\s+2\s+0/);
    assert.equal((await run('queues', 'resume', 'mail')).code, 0);
    const after = await withDb(t.file, (s) => s.leases.claim({ workerId: 'w', types: ['work'], queues: null, limit: 10, leaseMs: 60_000 }));
    assert.equal(after.length, 2);
  });

  test('a bad queue name is refused before anything is written', async () => {
    const r = await run('queues', 'pause', 'no spaces allowed');
    assert.equal(r.code, 2, r.stderr);
    assert.equal(await withDb(t.file, async (s) => (await s.queues.states()).some((q) => q.queue === 'no spaces allowed')), false);
  });

  test('an error text with terminal control sequences is shown escaped by jobs list and jobs show', async () => {
    const id = await withDb(t.file, async (s) => {
      const [r] = await s.jobs.insert({ jobs: [{ queue: 'evil', type: 'evil', payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 1, idempotencyKey: null, timeoutMs: 1000, maxRuntimeMs: 1000 }] });
      const [c] = await s.leases.claim({ workerId: 'w', types: ['evil'], queues: null, limit: 1, leaseMs: 60_000 });
      const error = { code: 'X', message: 'boom \u001b[2J\u001b]0;owned\u0007 \u202eevil' };
      await s.leases.finish({ items: [{ id: c!.id, leaseToken: c!.leaseToken, status: 'dead', error, attempt: { outcome: 'failed', error } }] });
      return r!.job.id;
    });
    for (const out of [(await run('jobs', 'list', '--status', 'dead')).stdout, (await run('jobs', 'show', id)).stdout]) {
      for (const c of ['\u001b', '\u0007', '\u202e']) assert.ok(!out.includes(c), `no raw ${JSON.stringify(c)} reaches the terminal`);
      assert.match(out, /\\u001b\[2J/);
    }
  });
});
