/**
 * An operator's retry, single or bulk, never breaks a workflow or a batch: a job whose parents
 * have not all succeeded is not made due (it would run before them), and a batch member whose
 * ending its batch has counted is not run again (it would be counted twice). The parent itself
 * and members not yet counted are retried as ever. An operator's cancel ends a job for its
 * workflow and its batch as a finish would: its waiting descendants under policy 'cancel' are
 * cancelled, and a batch counts it (the last pending member's cancel completes the batch).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClaimedJob, FlowJob, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { finishOf, mustGet, newJob, uniq, useDb } from './helpers.js';

const ERR = { code: 'E_G', message: 'broke' };
const BY = { actor: 'cli:ops@host', source: null };
const claim = (s: Storage, type: string): Promise<ClaimedJob[]> => s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 10, leaseMs: 30_000 });
const dead = (c: ClaimedJob) => finishOf(c, { status: 'dead', error: ERR, attempt: { outcome: 'dead', error: ERR } });

/** Every job of the table through the newest, retried in one bulk batch: the ids it changed. */
async function bulkRetry(s: Storage, status: 'cancelled' | 'dead'): Promise<string[]> {
  const [newest] = await s.jobs.list({ limit: 1 });
  const r = await s.jobs.bulk({ action: 'retry', filter: { status }, afterId: null, throughId: newest!.id, limit: 1000, bulkId: uniq('b'), ...BY });
  return r.ids;
}

export function operatorGuardTests(h: ConformanceHarness): void {
  describe('operator retry: workflows and batches', () => {
    const db = useDb(h);

    it('a child cancelled because its parent died is not retried, singly or in bulk; the parent is', async () => {
      const s = db.storage;
      const type = uniq('guard');
      const [root, child] = await s.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [] }, { ...newJob(type), parents: [0] } satisfies FlowJob], onParentFailure: 'cancel' });
      const [c] = await claim(s, type);
      await s.leases.finish({ items: [dead(c!)] });
      assert.equal((await mustGet(s, child!.id)).status, 'cancelled');
      assert.deepEqual(await s.jobs.retry({ id: child!.id }), { job: await mustGet(s, child!.id), applied: false });
      assert.ok(!(await bulkRetry(s, 'cancelled')).includes(child!.id), 'bulk retry leaves it');
      assert.equal((await mustGet(s, child!.id)).status, 'cancelled');
      assert.deepEqual(await claim(s, type), [], 'nothing claimable');
      assert.equal((await s.jobs.retry({ id: root!.id })).applied, true, 'the dead parent is retried');
      assert.equal((await s.jobs.bulk({ action: 'retry', filter: {}, afterId: null, throughId: child!.id, limit: 10, bulkId: uniq('b'), ...BY })).ids.includes(child!.id), false);
    });

    it('a batch member whose ending was counted is not retried, singly or in bulk; one not yet counted is', async () => {
      const s = db.storage;
      const type = uniq('member');
      const b = await s.workflows.createBatch({ callback: newJob(uniq('cb')), onSuccessOnly: false });
      const [m1, m2] = await s.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [] }, { ...newJob(type), parents: [] }], onParentFailure: 'cancel', batchId: b.id });
      await s.workflows.closeBatch({ batchId: b.id });
      const got = await claim(s, type);
      const first = got.find((c) => c.id === m1!.id)!;
      await s.leases.finish({ items: [dead(first), finishOf(got.find((c) => c.id === m2!.id)!, { status: 'failed', runAfterMs: 60_000, error: ERR, attempt: { outcome: 'failed', error: ERR } })] });
      assert.equal((await s.workflows.getBatch({ batchId: b.id }))!.dead, 1);
      assert.equal((await s.jobs.retry({ id: m1!.id })).applied, false, 'counted as dead: not run again');
      assert.ok(!(await bulkRetry(s, 'dead')).includes(m1!.id));
      assert.equal((await s.jobs.retry({ id: m2!.id })).applied, true, 'failed and not counted: retried');
      const after = (await s.workflows.getBatch({ batchId: b.id }))!;
      assert.deepEqual([after.state, after.pending, after.dead], ['closed', 1, 1]);
    });

    it("an operator's cancel of a parent, singly or in bulk, cancels what waits for it under 'cancel' and leaves it waiting under 'hold'", async () => {
      const s = db.storage;
      const flow = async (policy: 'cancel' | 'hold') => {
        const type = uniq('cancel');
        const [root, child, grandchild] = await s.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [] }, { ...newJob(type), parents: [0] }, { ...newJob(type), parents: [1] }], onParentFailure: policy });
        return { type, root: root!.id, child: child!.id, grandchild: grandchild!.id };
      };
      const a = await flow('cancel');
      assert.equal((await s.jobs.cancel({ id: a.root })).applied, true);
      for (const id of [a.child, a.grandchild]) {
        const j = await mustGet(s, id);
        assert.deepEqual([j.status, j.lastErrorCode], ['cancelled', 'PARENT_FAILED']);
      }
      const held = await flow('hold');
      assert.equal((await s.jobs.cancel({ id: held.root })).applied, true);
      assert.equal((await mustGet(s, held.child)).status, 'waiting');
      const b = await flow('cancel');
      const r = await s.jobs.bulk({ action: 'cancel', filter: { type: b.type, status: 'queued' }, afterId: null, throughId: b.grandchild, limit: 10, bulkId: uniq('b'), ...BY });
      assert.deepEqual(r.ids, [b.root]);
      assert.equal((await mustGet(s, b.grandchild)).status, 'cancelled');
    });

    it('a waiting job can be cancelled, and its own descendants with it', async () => {
      const s = db.storage;
      const type = uniq('cancel');
      const [, child, grandchild] = await s.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [] }, { ...newJob(type), parents: [0] }, { ...newJob(type), parents: [1] }], onParentFailure: 'cancel' });
      assert.equal((await s.jobs.cancel({ id: child!.id })).applied, true);
      assert.equal((await mustGet(s, child!.id)).status, 'cancelled');
      assert.deepEqual([(await mustGet(s, grandchild!.id)).status, (await mustGet(s, grandchild!.id)).lastErrorCode], ['cancelled', 'PARENT_FAILED']);
    });

    it("cancelling a batch's last pending member completes the batch and enqueues its callback once", async () => {
      const s = db.storage;
      const type = uniq('member');
      const cbType = uniq('cb');
      const b = await s.workflows.createBatch({ callback: newJob(cbType), onSuccessOnly: false });
      const [m1, m2] = await s.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [] }, { ...newJob(type), parents: [] }], onParentFailure: 'cancel', batchId: b.id });
      await s.workflows.closeBatch({ batchId: b.id });
      assert.equal((await s.jobs.cancel({ id: m1!.id })).applied, true);
      assert.deepEqual(((x) => [x.state, x.pending, x.cancelled])((await s.workflows.getBatch({ batchId: b.id }))!), ['closed', 1, 1]);
      const [c] = await claim(s, type);
      assert.equal(c?.id, m2!.id);
      const r = await s.jobs.bulk({ action: 'cancel', filter: { type }, afterId: null, throughId: m2!.id, limit: 10, bulkId: uniq('b'), ...BY });
      assert.deepEqual(r.ids, [m2!.id], 'a running member, cancelled in bulk');
      const done = (await s.workflows.getBatch({ batchId: b.id }))!;
      assert.deepEqual([done.state, done.pending, done.cancelled], ['done', 0, 2]);
      assert.equal((await s.jobs.list({ type: cbType, limit: 5 })).length, 1, 'the callback, once');
      assert.equal((await s.leases.finish({ items: [finishOf(c!)] }))[0]?.applied, false, 'the stale worker\'s finish counts nothing');
      assert.equal((await s.workflows.getBatch({ batchId: b.id }))!.cancelled, 2);
    });

    it('a bulk delete leaves a parent its waiting children need and a member its batch waits for, and takes the edges of what it deletes', async () => {
      const s = db.storage;
      const type = uniq('del');
      const [root, child] = await s.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [] }, { ...newJob(type), parents: [0] }], onParentFailure: 'hold' });
      const b = await s.workflows.createBatch({ callback: newJob(uniq('cb')), onSuccessOnly: false });
      const [member] = await s.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [] }], onParentFailure: 'cancel', batchId: b.id });
      const [plain] = await s.jobs.insert({ jobs: [newJob(type)] });
      const del = () => s.jobs.bulk({ action: 'delete', filter: { type }, afterId: null, throughId: plain!.job.id, limit: 10, bulkId: uniq('b'), ...BY });
      assert.equal(await s.jobs.bulkCount({ action: 'delete', filter: { type }, afterId: null, throughId: plain!.job.id }), 1, 'the count agrees');
      assert.deepEqual((await del()).ids, [plain!.job.id], 'only the plain job');
      assert.equal((await mustGet(s, root!.id)).status, 'queued');
      assert.equal((await mustGet(s, member!.id)).status, 'queued');
      // the parent dies and is held; cancelling the child frees it for a delete, which takes the edge too
      const [c] = await claim(s, type);
      await s.leases.finish({ items: [dead(c!)] });
      assert.deepEqual((await del()).ids, [], 'a dead parent held for an operator stays');
      await s.jobs.cancel({ id: child!.id });
      assert.deepEqual((await del()).ids, [root!.id, child!.id]);
      assert.deepEqual(await s.workflows.dependencies({ jobId: child!.id, limit: 10 }), { parents: [], children: [] });
    });
  });
}

