/** Retention and workflows: no job is pruned while a job depending on it has not ended; a pruned parent stays named by its children. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { finishOf, mustGet, newJob, sleep, uniq, useDb } from './helpers.js';
import { claimAll, diamond, succeed } from './workflows.js';

const ERR = { code: 'E_FLOW', message: 'broke' };
const ALL = { statuses: ['succeeded', 'dead', 'cancelled'] as const, olderThanMs: 0 };

/** Prune everything past a retention of 0 (after the clock moved past the last finish); what prunable said before. */
async function pruneAll(s: Storage): Promise<number> {
  await sleep(10);
  const counted = await s.diagnostics.prunable(ALL);
  const pruned = await s.jobs.prune({ ...ALL, limit: 10_000 });
  assert.equal(pruned, counted, 'prunable counts what prune takes');
  return pruned;
}

export function workflowRetentionTests(h: ConformanceHarness): void {
  describe('workflows: retention', () => {
    const db = useDb(h);

    it('keeps a dead parent its waiting children are held for; once none waits, it goes', async () => {
      const s = db.storage;
      const { type, ids } = await diamond(s, 'hold');
      const [root] = await claimAll(s, type);
      await s.leases.finish({ items: [finishOf(root!, { status: 'dead', error: ERR, attempt: { outcome: 'dead', error: ERR } })] });
      const [plain] = await s.jobs.insert({ jobs: [newJob(uniq('plain'))] });
      const [p] = await s.leases.claim({ workerId: 'w', types: [plain!.job.type], queues: null, limit: 1, leaseMs: 30_000 });
      await s.leases.finish({ items: [finishOf(p!, { status: 'dead', error: ERR, attempt: { outcome: 'dead', error: ERR } })] });
      assert.ok((await pruneAll(s)) >= 1);
      assert.equal(await s.jobs.get({ id: plain!.job.id }), null, 'a job outside a workflow is pruned');
      assert.equal((await mustGet(s, ids.root)).status, 'dead', 'the dead root is kept: its children wait for it');
      assert.equal((await s.jobs.retry({ id: ids.root })).applied, true);
      await succeed(s, type, ids.root);
      for (const k of ['left', 'right', 'join'] as const) await succeed(s, type, ids[k]);
      await pruneAll(s);
      assert.equal(await s.jobs.get({ id: ids.root }), null);
    });

    it('keeps a succeeded parent while a child is queued, running or retrying; a child still names its pruned parent', async () => {
      const s = db.storage;
      const type = uniq('flow-keep');
      const job = (parents: number[]) => ({ ...newJob(type), parents });
      const [parent, child, grand] = await s.workflows.insertFlow({ jobs: [job([]), job([0]), job([1])], onParentFailure: 'cancel' });
      await succeed(s, type, parent!.id);
      assert.equal((await mustGet(s, child!.id)).status, 'queued');
      await pruneAll(s);
      assert.ok(await s.jobs.get({ id: parent!.id }), 'kept while its child is queued');
      const [c] = await claimAll(s, type);
      await pruneAll(s);
      assert.ok(await s.jobs.get({ id: parent!.id }), 'kept while its child runs');
      await s.leases.finish({ items: [finishOf(c!, { status: 'failed', runAfterMs: 0, error: ERR, attempt: { outcome: 'failed', error: ERR } })] });
      await pruneAll(s);
      assert.ok(await s.jobs.get({ id: parent!.id }), 'kept while its child will retry');
      await succeed(s, type, child!.id);
      await pruneAll(s);
      assert.equal(await s.jobs.get({ id: parent!.id }), null, 'pruned once its child ended');
      assert.ok(await s.jobs.get({ id: child!.id }), 'the child is kept: the grandchild has not ended');
      assert.deepEqual(await s.workflows.dependencies({ jobId: child!.id, limit: 10 }), { parents: [parent!.id], children: [grand!.id] }, 'the child still names its pruned parent');
      await succeed(s, type, grand!.id);
      await pruneAll(s);
      assert.equal(await s.jobs.get({ id: child!.id }), null);
      assert.deepEqual(await s.workflows.dependencies({ jobId: grand!.id, limit: 10 }), { parents: [], children: [] }, 'edges go with their child');
    });

    it('a done batch goes with the prune that leaves it without members and callback job; an open one stays', async () => {
      const s = db.storage;
      const type = uniq('member');
      const cbType = uniq('cb');
      const prune = async (status: 'succeeded' | 'dead') => {
        await sleep(10);
        return s.jobs.prune({ statuses: [status], olderThanMs: 0, limit: 10_000 });
      };
      /** a batch of one member that succeeds and one that dies, closed: done */
      const batchOf = async (onSuccessOnly: boolean) => {
        const batch = await s.workflows.createBatch({ callback: newJob(cbType), onSuccessOnly });
        const [ok, bad] = await s.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [] }, { ...newJob(type), parents: [] }], onParentFailure: 'cancel', batchId: batch.id });
        await succeed(s, type, ok!.id);
        const [b] = await claimAll(s, type);
        assert.equal(b!.id, bad!.id);
        await s.leases.finish({ items: [finishOf(b!, { status: 'dead', error: ERR, attempt: { outcome: 'dead', error: ERR } })] });
        assert.equal((await s.workflows.closeBatch({ batchId: batch.id }))!.state, 'done');
        return batch.id;
      };
      const called = await batchOf(false);
      const silent = await batchOf(true);
      const open = await s.workflows.createBatch({ callback: newJob(cbType), onSuccessOnly: false });
      const [lone] = await s.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [] }], onParentFailure: 'cancel', batchId: open.id });
      await succeed(s, type, lone!.id);
      await prune('succeeded');
      assert.ok(await s.workflows.getBatch({ batchId: silent }), 'kept while a member is there');
      await prune('dead');
      assert.equal(await s.workflows.getBatch({ batchId: silent }), null, 'gone with its last member (it fired no callback)');
      assert.ok(await s.workflows.getBatch({ batchId: called }), 'kept while its callback job is there');
      const [cb] = await claimAll(s, cbType);
      await s.leases.finish({ items: [finishOf(cb!)] });
      await prune('succeeded');
      assert.equal(await s.workflows.getBatch({ batchId: called }), null, 'gone with its callback job');
      assert.equal((await s.workflows.getBatch({ batchId: open.id }))!.state, 'open', 'an open batch stays, members or not');
    });
  });
}
