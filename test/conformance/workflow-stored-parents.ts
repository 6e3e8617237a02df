/** workflows.insertFlow with parents already stored (FlowJob.storedParents): settled at insert, or by their finish, never stranded. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '../../src/core/index.js';
import type { ClaimedJob, FlowJob, ParentPolicy, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { finishOf, mustGet, newJob, uniq, useDb } from './helpers.js';
import { claimAll, succeed } from './workflows.js';

const ERR = { code: 'E_FLOW', message: 'broke' };

/** A plain job of `type`, claimed and ended as `end` (or left queued). */
async function storedJob(s: Storage, type: string, end?: 'succeeded' | 'dead' | 'cancelled'): Promise<string> {
  const [r] = await s.jobs.insert({ jobs: [newJob(type)] });
  if (end === undefined) return r!.job.id;
  const [c] = await claimAll(s, type);
  assert.equal(c!.id, r!.job.id);
  const err = end === 'succeeded' ? {} : { error: ERR, attempt: { outcome: end, error: ERR } };
  assert.equal((await s.leases.finish({ items: [finishOf(c!, { status: end, ...err })] }))[0]!.applied, true);
  return c!.id;
}

/** child waits for the stored job `parent`, grandchild for child (a job of the call). */
const chain = (s: Storage, type: string, parent: string, onParentFailure: ParentPolicy = 'cancel', batchId?: string) => {
  const job = (parents: number[], stored: string[] = []): FlowJob => ({ ...newJob(type), parents, storedParents: stored });
  return s.workflows.insertFlow({ jobs: [job([], [parent]), job([0])], onParentFailure, ...(batchId ? { batchId } : {}) });
};

export function storedParentTests(h: ConformanceHarness): void {
  describe('workflows: a stored job as a parent', () => {
    const db = useDb(h);

    it('a parent that already succeeded counts as done: the child is due at once and names it', async () => {
      const s = db.storage;
      const parent = await storedJob(s, uniq('p'), 'succeeded');
      const type = uniq('kid');
      const [child, grand] = await chain(s, type, parent);
      assert.deepEqual([child!.status, child!.pendingParents, grand!.status, grand!.pendingParents], ['queued', 0, 'waiting', 1]);
      assert.deepEqual(await s.workflows.dependencies({ jobId: child!.id, limit: 10 }), { parents: [parent], children: [grand!.id] });
      assert.deepEqual(await s.workflows.dependencies({ jobId: parent, limit: 10 }), { parents: [], children: [child!.id] });
      await succeed(s, type, child!.id);
      assert.equal((await mustGet(s, grand!.id)).status, 'queued');
    });

    it('a parent not ended yet is waited for: its success releases the child; retention keeps it meanwhile', async () => {
      const s = db.storage;
      const ptype = uniq('p');
      const parent = await storedJob(s, ptype);
      const type = uniq('kid');
      const [child] = await chain(s, type, parent);
      assert.deepEqual([child!.status, child!.pendingParents], ['waiting', 1]);
      assert.deepEqual(await claimAll(s, type), []);
      await succeed(s, ptype, parent);
      assert.equal((await mustGet(s, child!.id)).status, 'queued');
      assert.equal(await s.jobs.prune({ statuses: ['succeeded'], olderThanMs: 0, limit: 10_000 }) >= 0, true);
      assert.ok(await s.jobs.get({ id: parent }), 'kept while its child has not ended');
    });

    for (const end of ['dead', 'cancelled'] as const) {
      it(`a parent already ${end}: 'cancel' writes the child and its descendants cancelled; 'hold' keeps them waiting until a retry succeeds`, async () => {
        const s = db.storage;
        const ptype = uniq('p');
        const parent = await storedJob(s, ptype, end);
        const type = uniq('kid');
        for (const j of await chain(s, type, parent, 'cancel')) {
          assert.equal(j.status, 'cancelled');
          assert.equal(j.lastErrorCode, 'PARENT_FAILED');
          assert.equal(j.lastError, `job ${parent} it depends on ended ${end}`);
          assert.ok(j.finishedAt);
        }
        const [held, heldGrand] = await chain(s, type, parent, 'hold');
        assert.deepEqual([held!.status, held!.pendingParents, heldGrand!.status], ['waiting', 1, 'waiting']);
        assert.deepEqual(await claimAll(s, type), [], 'nothing of the workflow is claimable');
        if (end === 'dead') {
          assert.equal((await s.jobs.retry({ id: parent })).applied, true);
          await succeed(s, ptype, parent);
          assert.equal((await mustGet(s, held!.id)).status, 'queued');
        }
      });
    }

    it('a batch counts a member cancelled at insert as ended', async () => {
      const s = db.storage;
      const parent = await storedJob(s, uniq('p'), 'dead');
      const batch = await s.workflows.createBatch({ callback: newJob(uniq('cb')), onSuccessOnly: false });
      const type = uniq('kid');
      await chain(s, type, parent, 'cancel', batch.id);
      const b = await s.workflows.getBatch({ batchId: batch.id });
      assert.deepEqual([b!.total, b!.pending, b!.cancelled], [2, 0, 2]);
      assert.equal((await s.workflows.closeBatch({ batchId: batch.id }))!.state, 'done');
    });

    it('an id that names no job: ValidationError, nothing written (not even to the batch)', async () => {
      const s = db.storage;
      const type = uniq('kid');
      const real = await storedJob(s, uniq('p'));
      const batch = await s.workflows.createBatch({ callback: newJob(uniq('cb')), onSuccessOnly: false });
      for (const missing of ['999999999', '9223372036854775807']) {
        const jobs: FlowJob[] = [{ ...newJob(type), parents: [], storedParents: [real, missing] }];
        await assert.rejects(s.workflows.insertFlow({ jobs, onParentFailure: 'cancel' }), (e: unknown) => e instanceof ValidationError && new RegExp(`job ${missing}`).test(e.message));
        await assert.rejects(s.workflows.insertFlow({ jobs, onParentFailure: 'cancel', batchId: batch.id }), ValidationError);
      }
      assert.deepEqual(await s.jobs.list({ type, limit: 10 }), []);
      assert.equal((await s.workflows.getBatch({ batchId: batch.id }))!.total, 0);
      assert.deepEqual(await s.workflows.dependencies({ jobId: real, limit: 10 }), { parents: [], children: [] });
    });

    it('race: parents finished on several connections while others insert their children; no child stranded, none claimed before its parent succeeded', async () => {
      const stores = [db.storage, ...(await Promise.all(Array.from({ length: 3 }, () => db.connectAnother())))];
      const ptype = uniq('race-p');
      const type = uniq('race-kid');
      const n = 48;
      await Promise.all(Array.from({ length: n }, () => storedJob(db.storage, ptype)));
      const claimed: ClaimedJob[] = [];
      for (let tries = 0; claimed.length < n && tries < 100; tries++) claimed.push(...(await stores[0]!.leases.claim({ workerId: 'p', types: [ptype], queues: null, limit: n - claimed.length, leaseMs: 60_000 })));
      assert.equal(claimed.length, n);
      // every third parent dies: its child is cancelled (policy 'cancel'), never left waiting
      const dies = (i: number) => i % 3 === 0;
      const parentOf = new Map<string, string>();
      const early: string[] = [];
      let ran = 0;
      let inserted = 0;
      const toRun = claimed.filter((_, i) => !dies(i)).length;
      const until = Date.now() + 60_000;
      const claimer = async (s: Storage, w: number) => {
        while ((inserted < n || ran < toRun) && Date.now() < until) {
          const got = await s.leases.claim({ workerId: `k${w}`, types: [type], queues: null, limit: 4, leaseMs: 60_000 });
          if (got.length === 0) {
            await new Promise((r) => setTimeout(r, 2));
            continue;
          }
          for (const c of got) if ((await s.jobs.get({ id: parentOf.get(c.id) ?? '' }))?.status !== 'succeeded') early.push(c.id);
          await s.leases.finish({ items: got.map((c) => finishOf(c)) });
          ran += got.length;
        }
      };
      const end = (i: number) => (dies(i) ? { status: 'dead' as const, error: ERR, attempt: { outcome: 'dead' as const, error: ERR } } : {});
      const insert = async (c: { id: string }, i: number) => {
        const [row] = await stores[(i + 3) % 4]!.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [], storedParents: [c.id] }], onParentFailure: 'cancel' });
        parentOf.set(row!.id, c.id);
        inserted++;
      };
      await Promise.all([
        // each child's insert on one connection and its parent's finish on two others (one lands)
        ...claimed.map(async (c, i) => {
          const child = insert(c, i);
          // spread over the insert's transaction: some finishes reach the parent while the insert holds it
          await new Promise((r) => setTimeout(r, i % 6));
          await Promise.all([child, ...[1, 2].map((k) => stores[(i + k) % 4]!.leases.finish({ items: [finishOf(c, end(i))] }))]);
        }),
        claimer(stores[0]!, 0), claimer(stores[3]!, 1),
      ]);
      assert.deepEqual(early, [], 'no child claimed before its parent succeeded');
      const wrong: string[] = [];
      for (const [id, parent] of parentOf) {
        const i = claimed.findIndex((c) => c.id === parent);
        const child = await mustGet(db.storage, id);
        if (child.status !== (dies(i) ? 'cancelled' : 'succeeded')) wrong.push(`${id}: ${child.status} (parent ${parent} ${dies(i) ? 'dead' : 'succeeded'})`);
      }
      assert.deepEqual(wrong, [], 'every child ran, or was cancelled with its dead parent');
      assert.equal(ran, toRun);
    });
  });
}
