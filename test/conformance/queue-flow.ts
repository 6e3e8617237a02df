/**
 * Limits per queue in the claim (`queueFlow`): a limited queue never has more running jobs, of
 * every type together, than maxRunning, per key than maxRunningPerKey, or starts than its rate's
 * tokens, also under concurrent claimers on several connections; a job whose type is limited too
 * fits both; jobs a claim leaves are untouched (still queued, no attempt); a queue's buckets never
 * share a name with a type's.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { QueueFlow, TypeFlow } from '../../src/core/flow.js';
import type { ClaimedJob, NewJob, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { finish, insertN, mustGet, newJob, uniq, useDb } from './helpers.js';

const HOUR = 3_600_000;

interface Limits {
  flow?: Record<string, TypeFlow>;
  queueFlow?: Record<string, QueueFlow>;
  queues?: string[] | null;
  workerId?: string;
}

function claim(s: Storage, types: string[], limit: number, l: Limits = {}): Promise<ClaimedJob[]> {
  return s.leases.claim({ workerId: l.workerId ?? 'w1', types, queues: l.queues ?? null, limit, leaseMs: 60_000, flow: l.flow, queueFlow: l.queueFlow });
}

/** Insert `n` jobs per item of `spec` ([type, queue, key]), round-robin, so every kind has old and new jobs. */
async function spread(s: Storage, spec: [string, string, string | null][], n: number, over: Partial<NewJob> = {}): Promise<void> {
  const jobs: NewJob[] = [];
  for (let i = 0; i < n; i++) for (const [type, queue, key] of spec) jobs.push(newJob(type, { queue, concurrencyKey: key, payload: { i }, ...over }));
  await s.jobs.insert({ jobs });
}

function countBy<T>(xs: readonly T[], key: (x: T) => string): Record<string, number> {
  const m: Record<string, number> = {};
  for (const x of xs) m[key(x)] = (m[key(x)] ?? 0) + 1;
  return m;
}

export function queueFlowTests(h: ConformanceHarness): void {
  describe('flow control per queue in the claim', () => {
    const db = useDb(h);

    it('maxRunning counts the queue\'s jobs of every type, those other claims run too; left jobs are untouched; a finish frees a place', async () => {
      const s = db.storage;
      const [a, b, q, other] = [uniq('qa'), uniq('qb'), uniq('q'), uniq('q')];
      await spread(s, [[a, q, null], [b, q, null], [a, other, null]], 4);
      const queueFlow = { [q]: { maxRunning: 3 } };
      const first = await claim(s, [a], 2, { queueFlow });
      const got = await claim(s, [a, b], 20, { queueFlow });
      assert.equal(got.filter((j) => j.queue === q).length, 1, 'the two jobs of type a another claim runs count');
      assert.equal(got.filter((j) => j.queue === other).length, 4 - first.filter((j) => j.queue === other).length, 'another queue is not limited');
      const left = (await s.jobs.list({ type: b, limit: 10 })).filter((j) => j.status === 'queued');
      assert.ok(left.length >= 3);
      assert.equal((await mustGet(s, left[0]!.id)).attempts, 0, 'a job left by the claim used no attempt');
      assert.deepEqual(await s.attempts.list({ jobId: left[0]!.id }), []);
      assert.deepEqual(await claim(s, [a, b], 20, { queueFlow }), [], 'at the cap: nothing');
      await finish(s, [...first, ...got].find((j) => j.queue === q)!);
      assert.equal((await claim(s, [a, b], 20, { queueFlow })).length, 1);
    });

    it('maxRunningPerKey counts a key over every type of the queue; jobs without a key are limited only by maxRunning', async () => {
      const s = db.storage;
      const [a, b, q] = [uniq('pka'), uniq('pkb'), uniq('q')];
      await spread(s, [[a, q, 'x'], [b, q, 'x'], [a, q, 'y'], [b, q, null]], 3);
      const got = await claim(s, [a, b], 50, { queueFlow: { [q]: { maxRunningPerKey: 2 } } });
      assert.deepEqual(countBy(got, (j) => j.concurrencyKey ?? '(none)'), { x: 2, y: 2, '(none)': 3 });
      assert.deepEqual(await claim(s, [a, b], 50, { queueFlow: { [q]: { maxRunningPerKey: 2 } } }), []);
    });

    it('rate: the queue gets at most `limit` starts per period over its types; per key, a bucket per key', async () => {
      const s = db.storage;
      const [a, b, q, qk] = [uniq('ra'), uniq('rb'), uniq('q'), uniq('q')];
      await spread(s, [[a, q, null], [b, q, null]], 6);
      const got = await claim(s, [a, b], 20, { queueFlow: { [q]: { rate: { limit: 5, periodMs: HOUR } } } });
      assert.equal(got.length, 5);
      for (const j of got) await finish(s, j);
      assert.deepEqual(await claim(s, [a, b], 20, { queueFlow: { [q]: { rate: { limit: 5, periodMs: HOUR } } } }), [], 'no tokens left, running or not');
      await spread(s, [[a, qk, 'k1'], [b, qk, 'k2'], [b, qk, 'k1']], 3);
      const keyed = await claim(s, [a, b], 20, { queueFlow: { [qk]: { rate: { limit: 2, periodMs: HOUR, perKey: true } } }, queues: [qk] });
      assert.deepEqual(countBy(keyed, (j) => j.concurrencyKey ?? ''), { k1: 2, k2: 2 });
    });

    it("a queue's buckets and a type's of the same name are apart", async () => {
      const s = db.storage;
      const [name, other, inQueue] = [uniq('same'), uniq('q'), uniq('y')];
      await spread(s, [[name, other, null], [inQueue, name, null]], 5);
      const got = await claim(s, [name, inQueue], 20, { flow: { [name]: { rate: { limit: 2, periodMs: HOUR } } }, queueFlow: { [name]: { rate: { limit: 3, periodMs: HOUR } } } });
      assert.deepEqual(countBy(got, (j) => j.type), { [name]: 2, [inQueue]: 3 });
    });

    it('a job of a limited type in a limited queue fits both: the type\'s cap counts its jobs in other queues; the queue\'s other types fill the rest', async () => {
      const s = db.storage;
      const [t, u, q, r] = [uniq('mt'), uniq('mu'), uniq('q'), uniq('q')];
      await spread(s, [[t, q, null]], 3);
      await spread(s, [[u, q, null]], 5);
      await spread(s, [[t, r, null]], 3);
      const flow = { [t]: { maxRunning: 2 } };
      const queueFlow = { [q]: { maxRunning: 4 } };
      assert.equal((await claim(s, [t], 1, { flow, queues: [r] })).length, 1, 'one of the type runs outside the queue');
      const got = await claim(s, [t, u], 50, { flow, queueFlow });
      assert.deepEqual(countBy(got, (j) => `${j.type === t ? 't' : 'u'}:${j.queue === q ? 'q' : 'r'}`), { 't:q': 1, 'u:q': 3 }, "the type's cap over both queues, the queue's over both types");
      assert.deepEqual(await claim(s, [t, u], 50, { flow, queueFlow }), []);
    });

    it("a capped type's or a saturated key's backlog in the queue never hides another due job", async () => {
      const s = db.storage;
      const [t, u, q] = [uniq('bt'), uniq('bu'), uniq('q')];
      await s.jobs.insert({ jobs: Array.from({ length: 150 }, (_, i) => newJob(t, { queue: q, payload: { i }, concurrencyKey: i % 2 ? 'big' : null })) });
      await s.jobs.insert({ jobs: [newJob(u, { queue: q, concurrencyKey: 'big' }), newJob(u, { queue: q, concurrencyKey: 'small' })] });
      const got = await claim(s, [t, u], 4, { flow: { [t]: { maxRunning: 1 } }, queueFlow: { [q]: { maxRunningPerKey: 1 } } });
      assert.deepEqual(countBy(got, (j) => `${j.type === t ? 't' : 'u'}:${j.concurrencyKey ?? ''}`), { 't:': 1, 'u:big': 1, 'u:small': 1 });
      // a key saturated by its type's per-key limit, not the queue's
      const [v, w, q2] = [uniq('bv'), uniq('bw'), uniq('q')];
      await s.jobs.insert({ jobs: Array.from({ length: 150 }, (_, i) => newJob(v, { queue: q2, payload: { i }, concurrencyKey: 'big' })) });
      await s.jobs.insert({ jobs: [newJob(w, { queue: q2, concurrencyKey: 'big' }), newJob(v, { queue: q2, concurrencyKey: 'small' })] });
      const next = await claim(s, [v, w], 4, { flow: { [v]: { maxRunningPerKey: 1 } }, queueFlow: { [q2]: { maxRunning: 10 } } });
      assert.deepEqual(countBy(next, (j) => `${j.type === v ? 'v' : 'w'}:${j.concurrencyKey ?? ''}`), { 'v:big': 1, 'w:big': 1, 'v:small': 1 });
    });

    it('priority, then FIFO, among the jobs a queue-limited claim may start; the claim keeps to its queues', async () => {
      const s = db.storage;
      const [t, q, r] = [uniq('ot'), uniq('q'), uniq('q')];
      const [a1] = await insertN(s, t, 1, { queue: q, concurrencyKey: 'a' });
      await insertN(s, t, 1, { queue: q, concurrencyKey: 'a' });
      const [b1] = await insertN(s, t, 1, { queue: q, concurrencyKey: 'b' });
      const [c1] = await insertN(s, t, 1, { queue: q, concurrencyKey: 'c', priority: -1 });
      await insertN(s, t, 1, { queue: r });
      const l = { queueFlow: { [q]: { maxRunningPerKey: 1 } }, queues: [q] };
      assert.deepEqual((await claim(s, [t], 2, l)).map((j) => j.id).sort(), [c1, a1].sort(), 'the urgent job, then the oldest');
      assert.deepEqual((await claim(s, [t], 5, l)).map((j) => j.id), [b1]);
    });

    it('race: 8 connections claiming at once never exceed a queue\'s cap, per-key limit or rate budget, nor a type\'s inside a limited queue', async () => {
      const s = db.storage;
      const [a, b, c, m, n] = [uniq('ra'), uniq('rb'), uniq('rc'), uniq('rm'), uniq('rn')];
      const [capped, keyed, rated, mixed, free] = [uniq('qcap'), uniq('qkey'), uniq('qrate'), uniq('qmix'), uniq('qfree')];
      const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
      await spread(s, [[a, capped, null], [b, capped, null]], 20);
      await spread(s, keys.flatMap((k): [string, string, string][] => [[a, keyed, k], [c, keyed, k]]), 3);
      await spread(s, [[b, rated, null]], 30);
      await spread(s, [[m, mixed, 'x'], [m, free, 'x'], [n, mixed, 'x'], [m, mixed, null], [n, mixed, null], [m, free, null]], 6);
      const flow = { [m]: { maxRunning: 3, maxRunningPerKey: 2 } };
      const queueFlow = { [capped]: { maxRunning: 7 }, [keyed]: { maxRunningPerKey: 3 }, [rated]: { rate: { limit: 10, periodMs: HOUR } }, [mixed]: { maxRunning: 6, maxRunningPerKey: 3 } };
      const claimers = await Promise.all(Array.from({ length: 8 }, () => db.connectAnother()));
      const all: ClaimedJob[] = [];
      await Promise.all(
        claimers.map(async (cl, w) => {
          for (let round = 0, empty = 0; empty < 2; round++) {
            const got = await claim(cl, [a, b, c, m, n], 1 + ((w + round) % 4), { flow, queueFlow, workerId: `w${w}` });
            all.push(...got);
            empty = got.length === 0 ? empty + 1 : 0;
          }
        }),
      );
      const ids = all.map((j) => j.id);
      assert.equal(new Set(ids).size, ids.length, 'no job claimed twice');
      const inQueue = (q: string) => all.filter((j) => j.queue === q);
      assert.equal(inQueue(capped).length, 7, "the queue's cap, reached");
      const perKey = countBy(inQueue(keyed), (j) => j.concurrencyKey ?? '');
      assert.deepEqual(Object.values(perKey), keys.map(() => 3), 'three per key over both types, reached for every key');
      assert.equal(inQueue(rated).length, 10, "the queue's rate budget, spent");
      const ms = all.filter((j) => j.type === m);
      assert.equal(ms.length, 3, "the type's cap over both queues");
      assert.ok(ms.filter((j) => j.concurrencyKey === 'x').length <= 2, "the type's per-key limit");
      assert.equal(inQueue(mixed).length, 6, "the mixed queue's cap, reached");
      assert.ok(inQueue(mixed).filter((j) => j.concurrencyKey === 'x').length <= 3, "the mixed queue's per-key limit");
      const left = (await s.jobs.list({ type: b, limit: 100 })).filter((j) => j.status === 'queued');
      assert.ok(left.length > 0 && left.every((j) => j.attempts === 0), 'jobs over a limit stay queued, no attempt used');
    });
  });
}
