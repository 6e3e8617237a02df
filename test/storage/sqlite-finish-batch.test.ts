/**
 * SQLite writes the handlers' plain successes of one finish call together (two statements for
 * the whole call, src/storage/sqlite/leases.ts), and every other finish item by item. These tests
 * pin that the shared statements keep each item's fence, result and history row, and that an
 * item naming a job a second time meets the lease the first one left.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { JOB_STATUSES } from '../../src/core/status.js';
import type { FinishParams, NewJob, Storage } from '../../src/core/storage.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { LEASE_SQL } from '../../src/storage/sqlite/leases.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

let lastFile = '';
async function open(clock: () => number): Promise<Storage> {
  const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-sqlite-finish-'));
  dirs.push(dir);
  lastFile = path.join(dir, 'jobs.db');
  const s = sqliteStorage({ path: lastFile, clock });
  await s.migrate();
  return s;
}

function job(type: string): NewJob {
  return { queue: 'default', type, payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 };
}

const success = (id: string, leaseToken: string, result?: string): FinishParams => ({
  id, leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' }, ...(result === undefined ? {} : { result }),
});

describe('sqlite finish: plain successes written together', () => {
  it('each success keeps its own fence, result and history row; a job named again meets the lease its first item left', async () => {
    let t = Date.UTC(2031, 1, 2, 3, 4, 5);
    const s = await open(() => t);
    await s.jobs.insert({ jobs: Array.from({ length: 6 }, () => job('fin')) });
    t += 7;
    const claimed = await s.leases.claim({ workerId: 'w1', types: ['fin'], queues: null, limit: 6, leaseMs: 60_000 });
    const [a, b, c, d, e, f] = claimed;
    assert.ok(a && b && c && d && e && f);
    t += 40;
    const res = await s.leases.finish({ items: [
      success(a.id, a.leaseToken, JSON.stringify({ x: 1, text: 'naïve — 日本語 — 🚀 "q" \\ \n' })),
      { id: b.id, leaseToken: b.leaseToken, status: 'failed', runAfterMs: 10, error: { code: 'E', message: 'm' }, attempt: { outcome: 'failed' } },
      success(b.id, b.leaseToken),
      success(c.id, c.leaseToken, '"first"'),
      success(c.id, c.leaseToken, '"second"'),
      success(d.id, 'f'.repeat(32)),
      success(e.id, e.leaseToken),
      success('not-an-id', 'x'),
      success(f.id, f.leaseToken, 'null'),
    ] });
    assert.deepEqual(res.map((r) => [r.id, r.applied]), [
      [a.id, true], [b.id, true], [b.id, false], [c.id, true], [c.id, false], [d.id, false], [e.id, true], ['not-an-id', false], [f.id, true],
    ]);
    const ja = await s.jobs.get({ id: a.id });
    assert.deepEqual([ja?.status, ja?.leaseToken, ja?.lockedBy, ja?.lockedUntil, ja?.finishedAt?.getTime()], ['succeeded', null, null, null, t]);
    assert.deepEqual(ja?.result, { x: 1, text: 'naïve — 日本語 — 🚀 "q" \\ \n' });
    assert.equal((await s.jobs.get({ id: b.id }))?.status, 'failed', 'the failure came first');
    assert.equal((await s.jobs.get({ id: c.id }))?.result, 'first');
    assert.equal((await s.jobs.get({ id: d.id }))?.status, 'running', 'a wrong token lands nothing');
    const je = await s.jobs.get({ id: e.id });
    assert.deepEqual([je?.status, je?.result], ['succeeded', undefined]);
    assert.equal((await s.jobs.get({ id: f.id }))?.result, undefined, 'a null result is none');

    const ended = async (id: string) => (await s.attempts.list({ jobId: id })).filter((x) => x.outcome !== 'running');
    const [att, ...more] = await ended(a.id);
    assert.equal(more.length, 0);
    assert.deepEqual(
      [att?.attempt, att?.workerId, att?.leaseToken, att?.outcome, att?.startedAt.getTime(), att?.finishedAt?.getTime(), att?.durationMs, att?.waitMs, att?.errorCode, att?.retryDelayMs],
      [1, 'w1', a.leaseToken, 'succeeded', t - 40, t, 40, 7, null, null],
    );
    assert.deepEqual((await ended(b.id)).map((x) => x.outcome), ['failed']);
    assert.deepEqual((await ended(c.id)).map((x) => x.outcome), ['succeeded'], 'one history row for a job named twice');
    assert.deepEqual(await ended(d.id), []);
    assert.deepEqual((await ended(e.id)).map((x) => x.leaseToken), [e.leaseToken]);
    await s.close();
  });

  it('a success after the same job’s rescue in one call does not land', async () => {
    let t = Date.UTC(2031, 1, 2);
    const s = await open(() => t);
    await s.jobs.insert({ jobs: [job('fin')] });
    const [a] = await s.leases.claim({ workerId: 'w1', types: ['fin'], queues: null, limit: 1, leaseMs: 1_000 });
    assert.ok(a);
    t += 5_000;
    const res = await s.leases.finish({ items: [
      { id: a.id, leaseToken: a.leaseToken, status: 'queued', uncountAttempt: false, onlyIfExpired: true, attempt: { outcome: 'lease_expired' } },
      success(a.id, a.leaseToken),
    ] });
    assert.deepEqual(res.map((r) => r.applied), [true, false]);
    assert.equal((await s.jobs.get({ id: a.id }))?.status, 'queued');
    await s.close();
  });

  it('the jobs table still refuses a status outside the model, and takes every status in it', async () => {
    const s = await open(() => Date.UTC(2031, 1, 2));
    const [row] = await s.jobs.insert({ jobs: [job('fin')] });
    await s.close();
    const db = new Database(lastFile);
    try {
      const set = db.prepare('UPDATE leasehold_jobs SET status = ? WHERE id = ?');
      for (const status of JOB_STATUSES) assert.equal(set.run(status, Number(row?.job.id)).changes, 1, status);
      assert.throws(() => set.run('finished', Number(row?.job.id)), /CHECK constraint failed/);
    } finally {
      db.close();
    }
  });

  it('the shared success statement walks the finish call\'s items and read each job by its rowid, even on an analyzed table of many jobs', async () => {
    const s = await open(() => Date.UTC(2031, 1, 2));
    await s.jobs.insert({ jobs: Array.from({ length: 2000 }, () => job('fin')) });
    await s.close();
    const db = new Database(lastFile);
    try {
      db.exec('ANALYZE');
      for (const sql of [LEASE_SQL.succeed]) {
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql.replaceAll('{p}', 'leasehold_')}`).all({ now: 1, items: '[]' }) as { detail: string }[]).map((r) => r.detail);
        assert.match(plan[0] ?? '', /^SCAN i VIRTUAL TABLE/, sql);
        assert.match(plan[1] ?? '', /^SEARCH (j|leasehold_jobs) USING INTEGER PRIMARY KEY \(rowid=\?\)$/, sql);
        assert.equal(plan.length, 2, 'no sort, no other table');
      }
    } finally {
      db.close();
    }
  });
});
