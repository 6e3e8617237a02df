/**
 * The SQLite hot path (src/storage/sqlite/jobs.ts and leases.ts) builds the rows it hands back
 * from its input and a RETURNING list instead of reading them back, inserts runs of alike jobs
 * with one statement, and makes lease tokens in SQL. These tests pin that what it hands back is
 * exactly what is stored, whatever shape the batch has.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { JobRow, NewJob, Storage } from '../../src/core/storage.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function open(clock?: () => number): Promise<Storage> {
  const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-sqlite-hot-'));
  dirs.push(dir);
  const s = sqliteStorage({ path: path.join(dir, 'jobs.db'), ...(clock ? { clock } : {}) });
  await s.migrate();
  return s;
}

function job(type: string, over: Partial<NewJob> = {}): NewJob {
  return { queue: 'default', type, payload: { n: 1 }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000, ...over };
}

async function assertStored(s: Storage, rows: readonly JobRow[]): Promise<void> {
  for (const r of rows) assert.deepEqual(await s.jobs.get({ id: r.id }), r, `job ${r.id} handed back as stored`);
}

describe('sqlite hot path', () => {
  it('jobs.insert hands back the stored rows, in input order, across run boundaries and keys', async () => {
    const s = await open();
    const runAt = new Date(Date.UTC(2031, 4, 6, 7, 8, 9, 10));
    const batch: NewJob[] = [
      // one run of 1,500 alike jobs: more than one statement's worth
      ...Array.from({ length: 1500 }, (_, i) => job('bulk', { payload: { i } })),
      job('bulk', { payload: 'text', idempotencyKey: 'k1' }),
      job('bulk', { payload: { again: true }, idempotencyKey: 'k1' }),
      job('other', { payload: [1, 'two', { three: 3 }], priority: -5 }),
      job('other', { payload: null, priority: -5 }),
      job('other', { payload: 'naïve café — 日本語 — 🚀 "q" \\ \n', priority: 7, runAt }),
      job('other', { payload: 42, runAfterMs: 60_000, queue: 'mail', maxAttempts: 9, timeoutMs: 5, maxRuntimeMs: 6 }),
      job('other', { payload: undefined }),
      ...Array.from({ length: 3 }, (_, i) => job('tail', { payload: { i } })),
      // a concurrency key is one more shared value of a run; a unique key is looked up, never in a run
      ...Array.from({ length: 3 }, (_, i) => job('tail', { payload: { i }, concurrencyKey: 'c1' })),
      job('tail', { concurrencyKey: 'c2' }),
      job('tail', { unique: { key: 'u1', mode: 'active' }, concurrencyKey: 'c2' }),
    ];
    const res = await s.jobs.insert({ jobs: batch });
    assert.equal(res.length, batch.length);
    assert.deepEqual(res.map((r) => r.created), batch.map((_, i) => i !== 1501), 'only the repeated key found an existing row');
    assert.deepEqual(res.map((r) => r.outcome), batch.map((_, i) => (i === 1501 ? 'existing' : 'created')));
    assert.deepEqual(res.slice(-5).map((r) => [r.job.concurrencyKey, r.job.uniqueKey]), [['c1', undefined], ['c1', undefined], ['c1', undefined], ['c2', undefined], ['c2', 'u1']]);
    assert.equal(res[1501]?.job.id, res[1500]?.job.id);
    const created = res.filter((r) => r.created).map((r) => Number(r.job.id));
    for (let i = 1; i < created.length; i++) assert.ok(created[i]! > created[i - 1]!, 'ids increase in input order');
    assert.deepEqual(res.slice(0, 1500).map((r) => (r.job.payload as { i: number }).i), Array.from({ length: 1500 }, (_, i) => i));
    assert.equal(res[1502]?.job.priority, -5);
    assert.equal(res[1504]?.job.runAt.getTime(), runAt.getTime());
    assert.equal(res[1506]?.job.payload, null, 'an undefined payload is stored as null');
    await assertStored(s, res.map((r) => r.job));
    assert.equal((await s.jobs.list({ limit: 1000, type: 'other' })).length, 5);
    await s.close();
  });

  it('a returned payload is a copy, not the caller’s object', async () => {
    const s = await open();
    const payload = { list: [1, 2] };
    const [a, b] = await s.jobs.insert({ jobs: [job('copy', { payload }), job('copy', { payload })] });
    assert.notEqual(a?.job.payload, payload);
    assert.notEqual(a?.job.payload, b?.job.payload);
    assert.notEqual(a?.job.createdAt, a?.job.updatedAt, 'each Date its own object');
    await s.close();
  });

  it('leases.claim hands back the stored rows in claim order, with fresh 128-bit tokens and open attempts', async () => {
    let t = Date.UTC(2030, 0, 1);
    const s = await open(() => t);
    await s.jobs.insert({ jobs: Array.from({ length: 30 }, (_, i) => job('claim', {
      payload: { i }, priority: i % 3, runAfterMs: -i, concurrencyKey: i % 2 ? `k${i % 5}` : null, unique: i % 3 ? null : { key: `u${i}`, mode: 'active' },
    })) });
    await s.schedules.upsert({ items: [{
      name: 'nightly', cron: null, everyMs: 60_000, timezone: 'UTC', type: 'claim', payload: {}, queue: 'default', priority: -1,
      maxAttempts: 3, misfire: 'skip', misfireWindowMs: null, misfireMax: 100, enabled: true, source: 'cli', nextRunAt: new Date(t),
    }] });
    const slotJob = await s.schedules.runNow({ name: 'nightly', job: { queue: 'default', type: 'claim', payload: { s: 1 }, priority: -1, maxAttempts: 3, timeoutMs: 1, maxRuntimeMs: 2 } });
    t += 1;
    const claimed = await s.leases.claim({ workerId: 'w1', types: ['claim'], queues: null, limit: 20, leaseMs: 5000 });
    assert.equal(claimed.length, 20);
    assert.equal(claimed[0]?.id, slotJob?.id, 'priority -1 first');
    assert.equal(claimed[0]?.scheduleName, 'nightly');
    const order = claimed.map((c) => [c.priority, c.runAt.getTime(), Number(c.id)] as const);
    assert.deepEqual([...order].sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]), order, 'priority, run_at, id');
    assert.equal(new Set(claimed.map((c) => c.leaseToken)).size, 20);
    for (const c of claimed) {
      assert.match(c.leaseToken, /^[0-9a-f]{32}$/);
      assert.equal(c.lockedUntil.getTime(), t + 5000);
      const [attempt] = await s.attempts.list({ jobId: c.id });
      assert.deepEqual([attempt?.attempt, attempt?.leaseToken, attempt?.workerId, attempt?.outcome], [1, c.leaseToken, 'w1', 'running']);
    }
    assert.ok(claimed.some((c) => c.concurrencyKey !== undefined) && claimed.some((c) => c.uniqueKey !== undefined), 'keys handed back');
    await assertStored(s, claimed);
    const byQueue = await s.leases.claim({ workerId: 'w2', types: ['claim'], queues: ['mail'], limit: 20, leaseMs: 5000 });
    assert.equal(byQueue.length, 0, 'the queue filter applies');
    await s.close();
  });

  it('leases.finish and leases.heartbeat go item by item: a job named twice lands once, a wrong token beside a right one is lost', async () => {
    const s = await open();
    await s.jobs.insert({ jobs: [job('fin'), job('fin')] });
    const [a, b] = await s.leases.claim({ workerId: 'w', types: ['fin'], queues: null, limit: 2, leaseMs: 5000 });
    assert.ok(a && b);
    const hb = await s.leases.heartbeat({ leases: [{ id: a.id, leaseToken: 'f'.repeat(32) }, { id: a.id, leaseToken: a.leaseToken }, { id: 'x', leaseToken: 't' }], leaseMs: 9000 });
    assert.deepEqual(hb.lost, [{ id: a.id, status: 'running' }, { id: 'x', status: null }]);
    const done = { status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } };
    const res = await s.leases.finish({ items: [
      { id: a.id, leaseToken: a.leaseToken, ...done },
      { id: a.id, leaseToken: a.leaseToken, status: 'failed', runAfterMs: 10, error: { code: 'E', message: 'm' }, attempt: { outcome: 'failed' } },
      { id: b.id, leaseToken: b.leaseToken, status: 'failed', runAfterMs: 1000, error: { code: 'E1', message: 'boom' }, attempt: { outcome: 'failed', error: { code: 'E1', message: 'boom', stack: 'at x' }, retryDelayMs: 1000 } },
    ] });
    assert.deepEqual(res.map((r) => r.applied), [true, false, true]);
    const ja = await s.jobs.get({ id: a.id });
    assert.deepEqual([ja?.status, ja?.lastErrorCode, ja?.leaseToken], ['succeeded', null, null]);
    const jb = await s.jobs.get({ id: b.id });
    assert.deepEqual([jb?.status, jb?.lastErrorCode, jb?.lastError, jb?.finishedAt], ['failed', 'E1', 'boom', null]);
    const [att] = await s.attempts.list({ jobId: b.id });
    assert.deepEqual([att?.outcome, att?.errorCode, att?.errorStack, att?.retryDelayMs], ['failed', 'E1', 'at x', 1000]);
    await s.close();
  });
});
