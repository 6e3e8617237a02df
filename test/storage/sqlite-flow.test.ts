/**
 * Flow control and unique keys on SQLite beyond the conformance suite, whose "connections" in one
 * process never interleave inside a call (both drivers are synchronous): here several PROCESSES
 * claim limited types and insert one set of unique keys at once; a limited claim leaves paused
 * queues out and applies the queue filter; rate buckets refill with the database clock and are
 * stored under core/flow.ts's bucket names.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import type { TypeFlow } from '../../src/core/flow.js';
import type { ClaimedJob, Storage } from '../../src/core/storage.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { child, job, tempFiles, together } from './sqlite-support.js';

const tempFile = tempFiles();
const HOUR = 3_600_000;

async function open(file = tempFile(), clock?: () => number): Promise<Storage> {
  const s = sqliteStorage({ path: file, ...(clock ? { clock } : {}) });
  await s.migrate();
  return s;
}

function claim(s: Storage, types: string[], limit: number, flow?: Record<string, TypeFlow>, queues: string[] | null = null): Promise<ClaimedJob[]> {
  return s.leases.claim({ workerId: 'w', types, queues, limit, leaseMs: 60_000, ...(flow ? { flow } : {}) });
}

function countBy<T>(xs: readonly T[], key: (x: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const x of xs) m.set(key(x), (m.get(key(x)) ?? 0) + 1);
  return m;
}

describe('sqlite: flow control and unique keys', () => {
  it('three processes claiming limited and unlimited types at once: no limit exceeded, no job twice, every free job taken', async () => {
    const file = tempFile();
    const s = await open(file);
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    await s.jobs.insert({ jobs: [1, 2, 3].flatMap((i) => keys.map((k) => job('perkey', { payload: { i }, concurrencyKey: k }))) });
    await s.jobs.insert({ jobs: Array.from({ length: 100 }, () => job('capped')) });
    await s.jobs.insert({ jobs: Array.from({ length: 100 }, () => job('rated')) });
    await s.jobs.insert({ jobs: Array.from({ length: 100 }, () => job('free')) });
    const flow = JSON.stringify({ perkey: { maxRunningPerKey: 2 }, capped: { maxRunning: 29 }, rated: { rate: { limit: 43, periodMs: HOUR } } });
    const results = await together<{ ids: string[] }>(['a', 'b', 'c'].map((w) => child(['claim', file, w, 'perkey,capped,rated,free', '2', flow])));
    const ids = results.flatMap((r) => r.ids);
    assert.equal(new Set(ids).size, ids.length, 'no job claimed twice');
    const running = await s.jobs.list({ status: 'running', limit: 1000 });
    assert.equal(running.length, ids.length);
    const perKey = running.filter((j) => j.type === 'perkey');
    for (const [k, n] of countBy(perKey, (j) => j.concurrencyKey ?? '')) assert.ok(n <= 2, `key ${k}: ${n} running`);
    assert.deepEqual(Object.fromEntries(countBy(running, (j) => j.type)), { perkey: 400, capped: 29, rated: 43, free: 100 });
    await s.close();
  });

  for (const mode of ['active', 'debounce'] as const) {
    it(`three processes inserting the same 100 unique keys at once (${mode}): one job per key, every answer names it`, async () => {
      const file = tempFile();
      const s = await open(file);
      const results = await together<{ inserted: { id: string; outcome: string }[] }>(['a', 'b', 'c'].map((w) => child(['unique', file, w, 'u', mode, '100'])));
      for (let k = 0; k < 100; k++) {
        const answers = results.map((r) => r.inserted[k]!);
        assert.equal(answers.filter((a) => a.outcome === 'created').length, 1, `key ${k}: ${answers.map((a) => a.outcome).join(',')}`);
        assert.equal(new Set(answers.map((a) => a.id)).size, 1, `key ${k}: one job`);
        assert.ok(answers.every((a) => a.outcome === 'created' || a.outcome === (mode === 'active' ? 'existing' : 'replaced')));
      }
      const jobs = await s.jobs.list({ type: 'u', limit: 1000 });
      assert.equal(jobs.length, 100);
      assert.equal(new Set(jobs.map((j) => j.uniqueKey)).size, 100);
      await s.close();
    });
  }

  it('a limited claim leaves paused queues out and takes only the queues asked for', async () => {
    const s = await open();
    await s.jobs.insert({ jobs: ['a', 'a', 'b', 'b', 'c'].map((queue) => job('lim', { queue, concurrencyKey: queue })) });
    await s.queues.pause({ queue: 'a' });
    const flow = { lim: { maxRunningPerKey: 5 } };
    assert.deepEqual((await claim(s, ['lim'], 10, flow, ['a', 'b'])).map((j) => j.queue), ['b', 'b'], 'a paused, c not asked for');
    await s.queues.resume({ queue: 'a' });
    assert.deepEqual((await claim(s, ['lim'], 10, flow)).map((j) => j.queue).sort(), ['a', 'a', 'c']);
    await s.close();
  });

  it("an operator's retry of a job whose unique key another job took meanwhile brings it back without the key", async () => {
    const s = await open();
    const unique = { key: 'report:7', mode: 'active' as const };
    const [first] = await s.jobs.insert({ jobs: [job('report', { unique })] });
    await s.jobs.cancel({ id: first!.job.id });
    const [second] = await s.jobs.insert({ jobs: [job('report', { unique })] });
    assert.equal(second?.outcome, 'created');
    const retried = await s.jobs.retry({ id: first!.job.id });
    assert.deepEqual([retried.applied, retried.job?.status, retried.job?.uniqueKey], [true, 'queued', undefined]);
    assert.equal((await s.jobs.get({ id: second!.job.id }))?.uniqueKey, 'report:7', 'the holder keeps it');
    await s.jobs.cancel({ id: second!.job.id });
    const back = await s.jobs.retry({ id: second!.job.id });
    assert.equal(back.job?.uniqueKey, 'report:7', 'a free key comes back with its job');
    await s.close();
  });

  it('a rate bucket refills with the database clock; buckets are stored by type, or by type and key', async () => {
    let now = Date.UTC(2030, 0, 1);
    const file = tempFile();
    const s = await open(file, () => now);
    await s.jobs.insert({ jobs: Array.from({ length: 10 }, () => job('typed')) });
    await s.jobs.insert({ jobs: ['x', 'x', 'x', null].map((k) => job('keyed', { concurrencyKey: k })) });
    const typed = { typed: { rate: { limit: 2, periodMs: 1_000 } } };
    assert.equal((await claim(s, ['typed'], 10, typed)).length, 2);
    now += 499;
    assert.equal((await claim(s, ['typed'], 10, typed)).length, 0, 'not yet a whole token back');
    now += 1;
    assert.equal((await claim(s, ['typed'], 10, typed)).length, 1, 'half a period: one token');
    now += 5_000;
    assert.equal((await claim(s, ['typed'], 10, typed)).length, 2, 'a full bucket holds at most `limit`');
    const keyed = { keyed: { rate: { limit: 2, periodMs: HOUR, perKey: true } } };
    const got = await claim(s, ['keyed'], 10, keyed);
    assert.deepEqual(Object.fromEntries(countBy(got, (j) => j.concurrencyKey ?? '(none)')), { x: 2, '(none)': 1 });
    const raw = new Database(file, { readonly: true });
    try {
      const rows = raw.prepare('SELECT name, tokens, refilled_at AS refilledAt FROM leasehold_flow_buckets ORDER BY name').all();
      assert.deepEqual(rows, [
        { name: 'keyed|', tokens: 1, refilledAt: now },
        { name: 'keyed|x', tokens: 0, refilledAt: now },
        { name: 'typed', tokens: 0, refilledAt: now },
      ]);
    } finally {
      raw.close();
    }
    await s.close();
  });
});
