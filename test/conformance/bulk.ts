/**
 * Bulk actions, one batch per jobs.bulk call: the batch takes the jobs of its id range that
 * match the filter and a status the action may leave, lowest ids first, at most `limit`, and
 * changes each as jobs.retry / jobs.cancel would (one event each, naming the bulk action) or
 * deletes it with its history (never a running job, never the effect ledger); `next` says where
 * the next batch starts. Against claimers on other connections, no job is changed out of a
 * status it may not leave.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '../../src/core/errors.js';
import type { JobStatus } from '../../src/core/status.js';
import type { BulkAction, BulkBatch, ClaimedJob, JobFilter, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { claimOne, finish, finishOf, insertN, mustGet, newJob, uniq, useDb } from './helpers.js';

const ERR = { code: 'E_X', message: 'x' };
const BY = { actor: 'dashboard:ops', source: '10.0.0.7' };

/** A job of a fresh type in `queue`, in `status` (queued and failed: not due). */
async function jobAt(s: Storage, status: Exclude<JobStatus, 'waiting'>, queue: string): Promise<string> {
  const type = uniq('bulk');
  const [r] = await s.jobs.insert({ jobs: [newJob(type, { queue, runAfterMs: status === 'queued' ? 60_000 : 0 })] });
  if (status === 'queued') return r!.job.id;
  const c = await claimOne(s, type);
  if (status === 'failed') await finish(s, c, { status, runAfterMs: 60_000, error: ERR, attempt: { outcome: 'failed', error: ERR } });
  else if (status !== 'running') await finish(s, c, { status, error: ERR, attempt: { outcome: status, error: ERR } });
  return c.id;
}

async function newestId(s: Storage): Promise<string> {
  const [j] = await s.jobs.list({ limit: 1 });
  return j!.id;
}

/** Every batch of one bulk action from the first id through the newest, `limit` at a time; the ids changed and the batches' `next`s. */
async function bulkAll(s: Storage, action: BulkAction, filter: JobFilter, limit: number, bulkId = uniq('b')): Promise<{ ids: string[]; nexts: string[] }> {
  const throughId = await newestId(s);
  const ids: string[] = [];
  const nexts: string[] = [];
  let afterId: string | null = null;
  for (;;) {
    const r = await s.jobs.bulk({ action, filter, afterId, throughId, limit, bulkId, ...BY });
    ids.push(...r.ids);
    nexts.push(r.next);
    if (r.next === throughId) return { ids, nexts };
    afterId = r.next;
  }
}

const byId = (a: string, b: string): number => Number(a) - Number(b);

export function bulkTests(h: ConformanceHarness): void {
  describe('jobs.bulk', () => {
    const db = useDb(h);

    it('retry: the retryable jobs of the filter, lowest ids first, `limit` per batch, each with its event; running and succeeded jobs stay', async () => {
      const s = db.storage;
      const queue = uniq('q');
      const ids: Record<string, string> = {};
      for (const st of ['dead', 'running', 'cancelled', 'succeeded', 'failed', 'queued'] as const) ids[st] = await jobAt(s, st, queue);
      const other = await jobAt(s, 'dead', uniq('q'));
      const before = { running: await mustGet(s, ids.running!), succeeded: await mustGet(s, ids.succeeded!) };
      const { ids: changed, nexts } = await bulkAll(s, 'retry', { queue }, 2, 'b-retry-1');
      const want = [ids.dead!, ids.cancelled!, ids.failed!, ids.queued!];
      assert.deepEqual(changed, want);
      assert.deepEqual(nexts, [ids.cancelled!, ids.queued!, await newestId(s)], 'a full batch ends at its last job; one that is not ends the range');
      for (const id of want) {
        const j = await mustGet(s, id);
        assert.deepEqual([j.status, j.attempts, j.leaseToken], ['queued', 0, null], `job ${id}`);
        const [e, ...more] = await s.jobs.events({ jobId: id });
        assert.deepEqual(more, []);
        assert.deepEqual([e!.kind, e!.actor, e!.source, e!.detail.bulkId], ['retried', BY.actor, BY.source, 'b-retry-1']);
      }
      assert.equal((await s.jobs.events({ jobId: ids.dead! }))[0]!.detail.status, 'dead');
      assert.deepEqual(await mustGet(s, ids.running!), before.running);
      assert.deepEqual(await mustGet(s, ids.succeeded!), before.succeeded);
      assert.equal((await mustGet(s, other)).status, 'dead', 'another queue is not touched');
      for (const id of [ids.running!, ids.succeeded!, other]) assert.deepEqual(await s.jobs.events({ jobId: id }), []);
    });

    it('retry of two dead jobs holding one unique key in one batch: the lower id takes it back, the other comes back without it', async () => {
      const s = db.storage;
      const type = uniq('bulk-unique');
      const key = uniq('k');
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const [r] = await s.jobs.insert({ jobs: [newJob(type, { unique: { key, mode: 'active' } })] });
        assert.equal(r!.outcome, 'created');
        const c = await claimOne(s, type);
        await finish(s, c, { status: 'dead', error: ERR, attempt: { outcome: 'dead', error: ERR } });
        ids.push(r!.job.id);
      }
      assert.deepEqual((await bulkAll(s, 'retry', { type }, 10)).ids, ids);
      const [a, b] = [await mustGet(s, ids[0]!), await mustGet(s, ids[1]!)];
      assert.deepEqual([a.status, a.uniqueKey, b.status, b.uniqueKey], ['queued', key, 'queued', undefined]);
    });

    it('the filter: status, queue and type match exactly; nothing outside (afterId, throughId] is taken', async () => {
      const s = db.storage;
      const queue = uniq('q');
      const type = uniq('t');
      const ids = (await s.jobs.insert({ jobs: Array.from({ length: 6 }, (_, i) => newJob(i === 5 ? uniq('t') : type, { queue: i === 4 ? `${queue}x` : queue, runAfterMs: 60_000 })) })).map((r) => r.job.id);
      await s.jobs.cancel({ id: ids[3]! });
      const take = (filter: JobFilter, afterId: string | null, throughId: string) =>
        s.jobs.bulk({ action: 'cancel', filter, afterId, throughId, limit: 100, bulkId: uniq('b'), ...BY });
      assert.deepEqual((await take({ queue, type, status: 'queued' }, ids[0]!, ids[2]!)).ids, [ids[1]!, ids[2]!]);
      assert.deepEqual((await take({ queue, type }, null, ids[5]!)).ids, [ids[0]!], 'cancelled ones are not taken again; another queue, another type are not taken');
      assert.deepEqual((await take({ type: type.slice(0, -1) }, null, ids[5]!)).ids, [], 'a type is matched whole');
      assert.deepEqual((await take({ status: 'queued', queue: `${queue}x` }, null, ids[5]!)).ids, [ids[4]!]);
      assert.deepEqual(await take({ queue }, ids[5]!, ids[1]!), { ids: [], next: ids[1]! }, 'an empty range');
      assert.deepEqual(await take({ status: 'succeeded' }, null, ids[5]!), { ids: [], next: ids[5]! }, 'a status the action does not take');
    });

    it('ids: only those jobs of the range, and only from a status the action takes', async () => {
      const s = db.storage;
      const queue = uniq('q');
      const [a, b, c, d] = [await jobAt(s, 'dead', queue), await jobAt(s, 'succeeded', queue), await jobAt(s, 'dead', queue), await jobAt(s, 'dead', queue)];
      const take = (ids: string[], status?: 'dead' | 'failed') =>
        s.jobs.bulk({ action: 'retry', filter: status ? { status } : {}, afterId: null, throughId: d, ids, limit: 10, bulkId: uniq('b'), ...BY });
      assert.deepEqual((await take([d, b, a], 'failed')).ids, [], 'the filter\'s status still holds');
      assert.deepEqual((await take([d, b, a])).ids, [a, d], 'ascending; a succeeded job is not retried; c is not named');
      assert.equal((await mustGet(s, c)).status, 'dead');
      assert.deepEqual(await s.jobs.bulkCount({ action: 'retry', filter: {}, afterId: null, throughId: d, ids: [c, b] }), 1);
    });

    it('cancel: queued, failed and running jobs; a running attempt closes as cancelled and its event names it', async () => {
      const s = db.storage;
      const queue = uniq('q');
      const [queued, failed, running, dead] = [await jobAt(s, 'queued', queue), await jobAt(s, 'failed', queue), await jobAt(s, 'running', queue), await jobAt(s, 'dead', queue)];
      const lease = await mustGet(s, running);
      const { ids } = await bulkAll(s, 'cancel', { queue }, 10);
      assert.deepEqual(ids, [queued, failed, running]);
      for (const id of ids) assert.equal((await mustGet(s, id)).status, 'cancelled');
      assert.equal((await mustGet(s, dead)).status, 'dead');
      const attempts = await s.attempts.list({ jobId: running });
      assert.deepEqual(attempts.map((a) => [a.outcome, a.leaseToken]), [['cancelled', lease.leaseToken]]);
      assert.deepEqual((await s.jobs.events({ jobId: running }))[0]!.detail.lastAttemptId, attempts[0]!.id);
      const [eq] = await s.jobs.events({ jobId: queued });
      assert.deepEqual([eq!.kind, eq!.detail.status, eq!.detail.attempts, eq!.detail.lastAttemptId, typeof eq!.detail.bulkId], ['cancelled', 'queued', 0, null, 'string']);
      assert.deepEqual(await s.leases.finish({ items: [finishOf({ id: running, leaseToken: lease.leaseToken! })] }), [{ id: running, applied: false }]);
    });

    it('delete: every job not running, with its attempts and events; a running job and the effect ledger stay', async () => {
      const s = db.storage;
      const queue = uniq('q');
      const type = uniq('t');
      await s.jobs.insert({ jobs: [newJob(type, { queue })] });
      const withEffect = await claimOne(s, type);
      const key = uniq('eff');
      assert.deepEqual(await s.effects.reserve({ key, jobId: withEffect.id, leaseToken: withEffect.leaseToken }), { state: 'reserved' });
      assert.equal(await s.effects.complete({ key, jobId: withEffect.id, leaseToken: withEffect.leaseToken, result: { ok: 1 } }), true);
      await finish(s, withEffect);
      const others = [await jobAt(s, 'dead', queue), await jobAt(s, 'queued', queue), await jobAt(s, 'cancelled', queue)];
      await s.jobs.retry({ id: others[0]!, ...BY });
      const running = await jobAt(s, 'running', queue);
      const { ids } = await bulkAll(s, 'delete', { queue }, 2);
      assert.deepEqual(ids, [withEffect.id, ...others]);
      for (const id of ids) {
        assert.equal(await s.jobs.get({ id }), null);
        assert.deepEqual(await s.attempts.list({ jobId: id }), []);
        assert.deepEqual(await s.jobs.events({ jobId: id }), []);
      }
      assert.equal((await mustGet(s, running)).status, 'running');
      assert.equal((await s.attempts.list({ jobId: running })).length, 1);
      assert.deepEqual((await s.effects.get({ key }))?.result, { ok: 1 });
    });

    it('bulkCount counts what a batch would take, without a limit, and changes nothing', async () => {
      const s = db.storage;
      const queue = uniq('q');
      for (const st of ['dead', 'running', 'cancelled', 'succeeded', 'failed', 'queued', 'queued'] as const) await jobAt(s, st, queue);
      const throughId = await newestId(s);
      const count = (action: BulkAction, filter: JobFilter = { queue }) => s.jobs.bulkCount({ action, filter: { ...filter, queue }, afterId: null, throughId });
      assert.deepEqual([await count('retry'), await count('cancel'), await count('delete'), await count('retry', { status: 'queued' })], [5, 4, 6, 2]);
      assert.deepEqual((await bulkAll(s, 'retry', { queue }, 1)).ids.length, 5);
      assert.equal(await count('retry'), 5, 'retried jobs are queued, so a retry would take them again');
      assert.equal(await count('delete', { status: 'running' }), 0);
    });

    it('bad input is a ValidationError and changes nothing', async () => {
      const s = db.storage;
      const queue = uniq('q');
      const id = await jobAt(s, 'dead', queue);
      const ok: BulkBatch = { action: 'retry', filter: { queue }, afterId: null, throughId: id, limit: 10, bulkId: 'b-1', ...BY };
      const bad: Partial<Record<keyof BulkBatch, unknown>>[] = [
        { action: 'purge' }, { limit: 0 }, { limit: 1001 }, { limit: 1.5 }, { afterId: 'x' }, { afterId: '-1' }, { throughId: '' },
        { throughId: '99999999999999999999' }, { actor: '' }, { actor: undefined }, { source: 'a\u0007' }, { bulkId: 'has space' },
        { filter: { status: 'nope' } }, { filter: { queue: '' } }, { filter: { type: 'a b' } }, { filter: { typePrefix: 'x' } },
        { ids: ['0'] }, { ids: 'x' }, { ids: Array.from({ length: 1001 }, (_, i) => String(i + 1)) },
      ];
      for (const b of bad) {
        const p = { ...ok, ...b } as BulkBatch;
        await assert.rejects(s.jobs.bulk(p), ValidationError, JSON.stringify(b));
        if (!('actor' in b || 'source' in b || 'bulkId' in b || 'limit' in b)) await assert.rejects(s.jobs.bulkCount(p), ValidationError, JSON.stringify(b));
      }
      assert.equal((await mustGet(s, id)).status, 'dead');
      assert.deepEqual((await s.jobs.bulk(ok)).ids, [id]);
    });
  });

  describe('jobs.bulk against claimers', () => {
    const db = useDb(h);
    const N = 60;

    /** Claim jobs of `type` on `s` until `until()` is true, then once more; every lease taken. */
    async function claimWhile(s: Storage, type: string, until: () => boolean): Promise<ClaimedJob[]> {
      const got: ClaimedJob[] = [];
      for (let last = false; ; ) {
        got.push(...(await s.leases.claim({ workerId: 'racer', types: [type], queues: null, limit: 3, leaseMs: 60_000 })));
        if (last) return got;
        last = until();
      }
    }

    /** The bulk action over `type`'s jobs, 7 a batch, while two other connections claim them. */
    async function race(action: BulkAction, type: string): Promise<{ changed: string[]; claimed: ClaimedJob[] }> {
      const claimers = [await db.connectAnother(), await db.connectAnother()];
      let done = false;
      const bulk = bulkAll(db.storage, action, { type }, 7).finally(() => (done = true));
      const claims = await Promise.all(claimers.map((c) => claimWhile(c, type, () => done)));
      return { changed: (await bulk).ids, claimed: claims.flat() };
    }

    it('cancel: a job a claimer started is cancelled as running (its attempt closed), never as queued', async () => {
      const s = db.storage;
      const type = uniq('race-cancel');
      const ids = await insertN(s, type, N);
      const early = await s.leases.claim({ workerId: 'early', types: [type], queues: null, limit: 10, leaseMs: 60_000 });
      const { changed, claimed } = await race('cancel', type);
      assert.deepEqual([...changed].sort(byId), ids);
      let asRunning = 0;
      for (const id of ids) {
        assert.equal((await mustGet(s, id)).status, 'cancelled', `job ${id}`);
        const attempts = await s.attempts.list({ jobId: id });
        const [e, ...more] = await s.jobs.events({ jobId: id });
        assert.deepEqual(more, []);
        if (attempts.length === 0) assert.deepEqual(e!.detail.status, 'queued', `job ${id} never started`);
        else {
          asRunning++;
          assert.deepEqual([attempts.length, attempts[0]!.outcome, e!.detail.status, e!.detail.lastAttemptId], [1, 'cancelled', 'running', attempts[0]!.id], `job ${id} was running`);
        }
      }
      assert.equal(asRunning, early.length + claimed.length, 'every started job was cancelled as running');
      const finished = await s.leases.finish({ items: [...early, ...claimed].map((c) => finishOf(c)) });
      assert.ok(finished.every((f) => !f.applied), 'no claimer\'s lease survived the cancel');
    });

    it('retry: a failed job a claimer started is left running, its lease whole; a retried one was failed', async () => {
      const s = db.storage;
      const type = uniq('race-retry');
      const ids = await insertN(s, type, N);
      const first = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: N, leaseMs: 60_000 });
      await s.leases.finish({ items: first.map((c) => finishOf(c, { status: 'failed', runAfterMs: 0, error: ERR, attempt: { outcome: 'failed', error: ERR } })) });
      const { changed, claimed } = await race('retry', type);
      const leases = new Map(claimed.map((c) => [c.id, c]));
      for (const id of ids) {
        const j = await mustGet(s, id);
        const events = await s.jobs.events({ jobId: id });
        assert.equal(events.length, changed.includes(id) ? 1 : 0, `job ${id}`);
        if (events.length === 1) assert.deepEqual(events[0]!.detail.status, 'failed');
        const lease = leases.get(id);
        if (j.status === 'running') {
          assert.equal(j.leaseToken, lease?.leaseToken, `job ${id} runs under the claimer's lease`);
          assert.equal(j.attempts, events.length === 1 ? 1 : 2, `job ${id}: retried then claimed, or claimed and not retried`);
        } else {
          assert.deepEqual([j.status, j.attempts, j.leaseToken, events.length], ['queued', 0, null, 1], `job ${id}`);
        }
      }
      const held = await s.leases.heartbeat({ leases: claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken })), leaseMs: 60_000 });
      assert.deepEqual(held.lost, []);
    });

    it('delete: exactly the jobs no claimer started are deleted', async () => {
      const s = db.storage;
      const type = uniq('race-delete');
      const ids = await insertN(s, type, N);
      const early = await s.leases.claim({ workerId: 'early', types: [type], queues: null, limit: 10, leaseMs: 60_000 });
      const { changed, claimed } = await race('delete', type);
      const started = new Set([...early, ...claimed].map((c) => c.id));
      for (const id of ids) {
        const j = await s.jobs.get({ id });
        assert.equal(j?.status ?? 'deleted', started.has(id) ? 'running' : 'deleted', `job ${id}`);
      }
      assert.deepEqual([...changed].sort(byId), ids.filter((id) => !started.has(id)));
    });
  });
}
