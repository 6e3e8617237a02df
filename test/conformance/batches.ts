/** Batches (src/core/storage-workflows.ts): members counted by their fenced finishes; the callback enqueued once by the last. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { batchCallbackKey } from '../../src/core/batches.js';
import type { ClaimedJob, FlowJob, JobRow, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { WRONG_TOKEN, finishOf, mustGet, newJob, uniq, useDb } from './helpers.js';

const ERR = { code: 'E_B', message: 'member broke' };

async function batchOf(s: Storage, n: number, onSuccessOnly = false): Promise<{ id: string; type: string; cbType: string; members: JobRow[] }> {
  const type = uniq('member');
  const cbType = uniq('callback');
  const b = await s.workflows.createBatch({ callback: newJob(cbType, { payload: { report: 'r1' } }), onSuccessOnly });
  const members = n === 0 ? [] : await s.workflows.insertFlow({ jobs: Array.from({ length: n }, (): FlowJob => ({ ...newJob(type), parents: [] })), onParentFailure: 'cancel', batchId: b.id });
  return { id: b.id, type, cbType, members };
}

const claimAll = async (s: Storage, type: string, n: number): Promise<ClaimedJob[]> => s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: n, leaseMs: 30_000 });
const callbacks = (s: Storage, cbType: string) => s.jobs.list({ type: cbType, limit: 10 });
const end = (c: ClaimedJob, status: 'succeeded' | 'dead' | 'cancelled') =>
  finishOf(c, status === 'succeeded' ? {} : { status, error: ERR, attempt: { outcome: status, error: ERR } });

export function batchTests(h: ConformanceHarness): void {
  describe('workflows: batches', () => {
    const db = useDb(h);

    it('members count as they end; once closed, the last one enqueues the callback once with the counts', async () => {
      const s = db.storage;
      const b = await batchOf(s, 3);
      assert.deepEqual(b.members.map((m) => m.batchId), [b.id, b.id, b.id]);
      const c = await claimAll(s, b.type, 3);
      await s.leases.finish({ items: [end(c[0]!, 'succeeded'), end(c[1]!, 'succeeded')] });
      const open = (await s.workflows.getBatch({ batchId: b.id }))!;
      assert.deepEqual([open.state, open.total, open.pending, open.succeeded, open.finishedAt, open.callbackType], ['open', 3, 1, 2, null, b.cbType]);
      assert.equal((await s.workflows.closeBatch({ batchId: b.id }))!.state, 'closed');
      assert.deepEqual(await callbacks(s, b.cbType), [], 'not before its last member');
      await s.leases.finish({ items: [end(c[2]!, 'dead')] });
      const done = (await s.workflows.getBatch({ batchId: b.id }))!;
      assert.deepEqual([done.state, done.pending, done.succeeded, done.dead, done.cancelled], ['done', 0, 2, 1, 0]);
      assert.ok(done.finishedAt);
      const [cb, ...more] = await callbacks(s, b.cbType);
      assert.deepEqual(more, []);
      assert.equal(cb!.status, 'queued');
      assert.equal(cb!.idempotencyKey, batchCallbackKey(b.id));
      assert.deepEqual(cb!.payload, { report: 'r1', batch: { id: b.id, total: 3, succeeded: 2, dead: 1, cancelled: 0 } });
    });

    it('a retrying failure and a finish under a lost lease count nothing; members added while open count', async () => {
      const s = db.storage;
      const b = await batchOf(s, 1);
      const [c] = await claimAll(s, b.type, 1);
      await s.leases.finish({ items: [finishOf({ id: c!.id, leaseToken: WRONG_TOKEN }), finishOf(c!, { status: 'failed', runAfterMs: 0, error: ERR, attempt: { outcome: 'failed', error: ERR } })] });
      assert.equal((await s.workflows.getBatch({ batchId: b.id }))!.pending, 1);
      const [again] = await claimAll(s, b.type, 1);
      await s.leases.finish({ items: [end(again!, 'succeeded')] });
      assert.deepEqual(await callbacks(s, b.cbType), [], 'still open: no callback at zero pending');
      const added = await s.workflows.insertFlow({ jobs: [{ ...newJob(b.type), parents: [] }], onParentFailure: 'cancel', batchId: b.id });
      assert.equal(added.length, 1);
      assert.deepEqual(((await s.workflows.getBatch({ batchId: b.id }))!).total, 2);
      await s.workflows.closeBatch({ batchId: b.id });
      const [last] = await claimAll(s, b.type, 1);
      await s.leases.finish({ items: [end(last!, 'cancelled')] });
      assert.deepEqual((await callbacks(s, b.cbType)).map((j) => (j.payload as { batch: unknown }).batch), [{ id: b.id, total: 2, succeeded: 1, dead: 0, cancelled: 1 }]);
    });

    it('closing with nothing pending enqueues at once; a closed or unknown batch takes no members; onSuccessOnly skips the callback after a failure', async () => {
      const s = db.storage;
      const empty = await batchOf(s, 0);
      assert.equal((await s.workflows.closeBatch({ batchId: empty.id }))!.state, 'done');
      assert.equal((await callbacks(s, empty.cbType)).length, 1);
      assert.equal((await s.workflows.closeBatch({ batchId: empty.id }))!.state, 'done', 'closing again changes nothing');
      assert.equal((await callbacks(s, empty.cbType)).length, 1);
      assert.deepEqual(await s.workflows.insertFlow({ jobs: [{ ...newJob(empty.type), parents: [] }], onParentFailure: 'cancel', batchId: empty.id }), []);
      assert.deepEqual(await s.jobs.list({ type: empty.type, limit: 5 }), [], 'nothing inserted');
      assert.equal(await s.workflows.closeBatch({ batchId: '999999999' }), null);
      assert.equal(await s.workflows.getBatch({ batchId: '999999999' }), null);

      const strict = await batchOf(s, 2, true);
      await s.workflows.closeBatch({ batchId: strict.id });
      const c = await claimAll(s, strict.type, 2);
      await s.leases.finish({ items: [end(c[0]!, 'succeeded'), end(c[1]!, 'dead')] });
      assert.equal((await s.workflows.getBatch({ batchId: strict.id }))!.state, 'done');
      assert.deepEqual(await callbacks(s, strict.cbType), []);
      const ok = await batchOf(s, 1, true);
      await s.workflows.closeBatch({ batchId: ok.id });
      await s.leases.finish({ items: [end((await claimAll(s, ok.type, 1))[0]!, 'succeeded')] });
      assert.equal((await callbacks(s, ok.cbType)).length, 1);
    });

    it("a workflow in a batch: the jobs a dead parent cancels count as the batch's cancelled members", async () => {
      const s = db.storage;
      const type = uniq('flow-member');
      const cbType = uniq('callback');
      const b = await s.workflows.createBatch({ callback: newJob(cbType, { payload: {} }), onSuccessOnly: false });
      const job = (parents: number[]): FlowJob => ({ ...newJob(type), parents });
      await s.workflows.insertFlow({ jobs: [job([]), job([0]), job([0]), job([1, 2])], onParentFailure: 'cancel', batchId: b.id });
      await s.workflows.closeBatch({ batchId: b.id });
      const [root] = await claimAll(s, type, 4);
      await s.leases.finish({ items: [end(root!, 'dead')] });
      const done = (await s.workflows.getBatch({ batchId: b.id }))!;
      assert.deepEqual([done.state, done.pending, done.succeeded, done.dead, done.cancelled], ['done', 0, 0, 1, 3]);
      assert.deepEqual((await callbacks(s, cbType)).map((j) => (j.payload as { batch: unknown }).batch), [{ id: b.id, total: 4, succeeded: 0, dead: 1, cancelled: 3 }]);
    });

    it('the last members finishing at once on several connections enqueue the callback exactly once', async () => {
      const stores = [db.storage, ...(await Promise.all(Array.from({ length: 3 }, () => db.connectAnother())))];
      for (let round = 0; round < 4; round++) {
        const b = await batchOf(db.storage, 24);
        await db.storage.workflows.closeBatch({ batchId: b.id });
        const claimed = await claimAll(db.storage, b.type, 24);
        assert.equal(claimed.length, 24);
        // one finish per job, each store taking every fourth, all in flight together
        await Promise.all(claimed.map((c, i) => stores[i % stores.length]!.leases.finish({ items: [end(c, i % 5 === 0 ? 'dead' : 'succeeded')] })));
        const cbs = await callbacks(db.storage, b.cbType);
        assert.equal(cbs.length, 1, `round ${round}: one callback`);
        assert.deepEqual((cbs[0]!.payload as { batch: unknown }).batch, { id: b.id, total: 24, succeeded: 19, dead: 5, cancelled: 0 });
        assert.equal((await mustGet(db.storage, cbs[0]!.id)).idempotencyKey, batchCallbackKey(b.id));
      }
    });
  });
}
