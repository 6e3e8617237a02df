/**
 * Flow control in the claim: paused queues yield nothing; a limited type never has more running
 * jobs than maxRunning, per key than maxRunningPerKey, or starts than its rate's tokens, also
 * under concurrent claimers on several connections; jobs a claim leaves are untouched (still
 * queued, no attempt), and a key's backlog never hides another key's due job.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TypeFlow } from '../../src/core/flow.js';
import type { ClaimedJob, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { finish, insertN, mustGet, newJob, uniq, useDb } from './helpers.js';

const HOUR = 3_600_000;

function claim(s: Storage, types: string[], limit: number, flow?: Record<string, TypeFlow>, workerId = 'w1'): Promise<ClaimedJob[]> {
  return s.leases.claim({ workerId, types, queues: null, limit, leaseMs: 60_000, ...(flow ? { flow } : {}) });
}

/** Jobs of `type`, `n` per key, keys inserted round-robin (so every key has old and new jobs). */
async function keyed(s: Storage, type: string, keys: (string | null)[], n: number): Promise<void> {
  const jobs = [];
  for (let i = 0; i < n; i++) for (const k of keys) jobs.push(newJob(type, { payload: { k, i }, concurrencyKey: k }));
  await s.jobs.insert({ jobs });
}

function countBy<T>(xs: readonly T[], key: (x: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const x of xs) m.set(key(x), (m.get(key(x)) ?? 0) + 1);
  return m;
}

export function flowTests(h: ConformanceHarness): void {
  describe('flow control in the claim', () => {
    const db = useDb(h);

    it('a paused queue yields no claims, on any connection; resume makes its jobs claimable; other queues go on', async () => {
      const s = db.storage;
      const other = await db.connectAnother();
      const type = uniq('paused');
      const [q1, q2] = [uniq('q'), uniq('q')];
      await s.jobs.insert({ jobs: [newJob(type, { queue: q1 }), newJob(type, { queue: q1 }), newJob(type, { queue: q2 })] });
      const paused = await s.queues.pause({ queue: q1 });
      assert.equal(paused.paused, true);
      assert.ok(paused.pausedAt instanceof Date);
      const got = await claim(other, [type], 10);
      assert.deepEqual(got.map((j) => j.queue), [q2], 'only the unpaused queue is claimed, from another connection too');
      assert.deepEqual(await claim(s, [type], 10), []);
      const states = await other.queues.states();
      assert.equal(states.find((q) => q.queue === q1)?.paused, true);
      const resumed = await other.queues.resume({ queue: q1 });
      assert.equal(resumed.paused, false);
      assert.equal((await claim(s, [type], 10)).length, 2, 'both jobs of the resumed queue');
      assert.equal((await s.queues.states()).find((q) => q.queue === q1)?.paused, false);
    });

    it('maxRunning: a claim takes only what the cap leaves; a finish frees a place', async () => {
      const s = db.storage;
      const type = uniq('cap');
      const ids = await insertN(s, type, 10);
      const flow = { [type]: { maxRunning: 3 } };
      const first = await claim(s, [type], 10, flow);
      assert.equal(first.length, 3);
      assert.deepEqual(first.map((j) => j.id).sort(), ids.slice(0, 3).sort(), 'in claim order');
      assert.equal((await claim(s, [type], 10, flow)).length, 0, 'at the cap: nothing');
      const left = await mustGet(s, ids[5]!);
      assert.equal(left.status, 'queued');
      assert.equal(left.attempts, 0, 'a job left by the claim used no attempt');
      assert.deepEqual(await s.attempts.list({ jobId: ids[5]! }), []);
      await finish(s, first[0]!);
      assert.equal((await claim(s, [type], 10, flow)).length, 1);
    });

    it('maxRunningPerKey: at most N running per key; jobs without a key are limited only by maxRunning', async () => {
      const s = db.storage;
      const type = uniq('perkey');
      await keyed(s, type, ['a', 'b', null], 4);
      const got = await claim(s, [type], 50, { [type]: { maxRunningPerKey: 2 } });
      const byKey = countBy(got, (j) => j.concurrencyKey ?? '(none)');
      assert.deepEqual(Object.fromEntries(byKey), { a: 2, b: 2, '(none)': 4 });
      const again = await claim(s, [type], 50, { [type]: { maxRunningPerKey: 2 } });
      assert.deepEqual(again, [], 'every key at its limit, the keyless all running');
    });

    it("a key's backlog never hides another key's due job", async () => {
      const s = db.storage;
      const type = uniq('backlog');
      await s.jobs.insert({ jobs: Array.from({ length: 200 }, (_, i) => newJob(type, { payload: { i }, concurrencyKey: 'big' })) });
      await s.jobs.insert({ jobs: [newJob(type, { concurrencyKey: 'small' })] });
      const got = await claim(s, [type], 3, { [type]: { maxRunningPerKey: 2 } });
      assert.deepEqual(Object.fromEntries(countBy(got, (j) => j.concurrencyKey ?? '')), { big: 2, small: 1 });
    });

    it('priority, then FIFO, among the jobs a limited claim may start', async () => {
      const s = db.storage;
      const type = uniq('order');
      const [a1] = await insertN(s, type, 1, { concurrencyKey: 'a' });
      await insertN(s, type, 1, { concurrencyKey: 'a' });
      const [b1] = await insertN(s, type, 1, { concurrencyKey: 'b' });
      const [c1] = await insertN(s, type, 1, { concurrencyKey: 'c', priority: -1 });
      const got = await claim(s, [type], 2, { [type]: { maxRunningPerKey: 1 } });
      assert.deepEqual(got.map((j) => j.id).sort(), [c1, a1].sort(), 'the urgent job, then the oldest');
      const next = await claim(s, [type], 5, { [type]: { maxRunningPerKey: 1 } });
      assert.deepEqual(next.map((j) => j.id), [b1]);
    });

    it('rate: a type gets at most `limit` starts per period; left jobs stay due', async () => {
      const s = db.storage;
      const type = uniq('rate');
      await insertN(s, type, 12);
      const flow = { [type]: { rate: { limit: 5, periodMs: HOUR } } };
      const got = await claim(s, [type], 10, flow);
      assert.equal(got.length, 5);
      for (const j of got) await finish(s, j);
      assert.equal((await claim(s, [type], 10, flow)).length, 0, 'no tokens left this period, running or not');
      assert.equal((await claim(s, [type], 10)).length, 7, 'the rest is still due (claimed without the limit to show it)');
    });

    it('rate per key: each key its own bucket', async () => {
      const s = db.storage;
      const type = uniq('ratekey');
      await keyed(s, type, ['x', 'y'], 5);
      const got = await claim(s, [type], 20, { [type]: { rate: { limit: 2, periodMs: HOUR, perKey: true } } });
      assert.deepEqual(Object.fromEntries(countBy(got, (j) => j.concurrencyKey ?? '')), { x: 2, y: 2 });
    });

    it('a limited and an unlimited type share the claim limit', async () => {
      const s = db.storage;
      const [lim, free] = [uniq('lim'), uniq('free')];
      await insertN(s, lim, 5);
      await insertN(s, free, 5);
      const got = await claim(s, [lim, free], 6, { [lim]: { maxRunning: 2 } });
      assert.equal(got.length, 6);
      assert.equal(got.filter((j) => j.type === lim).length, 2);
    });

    it('race: 8 connections claiming at once never exceed a per-key limit, a cap or a rate budget', async () => {
      const s = db.storage;
      const [perKey, capped, rated] = [uniq('race-key'), uniq('race-cap'), uniq('race-rate')];
      const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
      await keyed(s, perKey, keys, 5);
      await insertN(s, capped, 40);
      await insertN(s, rated, 40);
      const flow = { [perKey]: { maxRunningPerKey: 2 }, [capped]: { maxRunning: 7 }, [rated]: { rate: { limit: 10, periodMs: HOUR } } };
      const claimers = await Promise.all(Array.from({ length: 8 }, () => db.connectAnother()));
      const all: ClaimedJob[] = [];
      await Promise.all(
        claimers.map(async (c, w) => {
          for (let round = 0, empty = 0; empty < 2; round++) {
            const got = await claim(c, [perKey, capped, rated], 1 + ((w + round) % 4), flow, `w${w}`);
            all.push(...got);
            empty = got.length === 0 ? empty + 1 : 0;
          }
        }),
      );
      const ids = all.map((j) => j.id);
      assert.equal(new Set(ids).size, ids.length, 'no job claimed twice');
      const perKeyJobs = all.filter((j) => j.type === perKey);
      for (const [k, n] of countBy(perKeyJobs, (j) => j.concurrencyKey ?? '')) assert.ok(n <= 2, `key ${k}: ${n} running`);
      assert.equal(perKeyJobs.length, 40, 'every key reached its limit');
      assert.equal(all.filter((j) => j.type === capped).length, 7);
      assert.equal(all.filter((j) => j.type === rated).length, 10);
    });
  });
}
