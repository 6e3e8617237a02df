/** workflows.graph, listBatches and batchMembers (src/core/storage-workflows.ts): bounded reads for an operator's pages. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FlowJob, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { finishOf, newJob, sleep, uniq, useDb } from './helpers.js';
import { claimAll, diamond, succeed } from './workflows.js';

/** A chain of `n` jobs of one fresh type, each after the one before. */
async function chain(s: Storage, n: number): Promise<string[]> {
  const type = uniq('chain');
  const rows = await s.workflows.insertFlow({ jobs: Array.from({ length: n }, (_, i): FlowJob => ({ ...newJob(type), parents: i === 0 ? [] : [i - 1] })), onParentFailure: 'cancel' });
  return rows.map((r) => r.id);
}

/** Fill jobs until the next id lies a few below a power of ten, so five jobs inserted next cross it (an order by their text would show); false when that is too far. */
async function nearPowerOfTen(s: Storage): Promise<boolean> {
  for (let round = 0; round < 6; round++) {
    const next = Number((await s.jobs.insert({ jobs: [newJob(uniq('probe'))] }))[0]!.job.id) + 1;
    const need = 10 ** String(next).length - 4 - next;
    if (need < 0) return true;
    if (need > 5_000) return false;
    // a multi-row insert may skip ids (MySQL's auto-increment): the last few one at a time
    if (need > 20) await s.jobs.insert({ jobs: Array.from({ length: need - 10 }, () => newJob(uniq('filler'))) });
    else for (let i = 0; i < need; i++) await s.jobs.insert({ jobs: [newJob(uniq('filler'))] });
  }
  return false;
}

const ids = (g: { jobs: { id: string }[] }) => g.jobs.map((j) => j.id);

export function workflowGraphTests(h: ConformanceHarness): void {
  describe('workflows: graph and batch reads', () => {
    const db = useDb(h);

    it('graph: the whole diamond from any of its jobs, in id order, with its edges and statuses; no other workflow', async () => {
      const s = db.storage;
      const other = await diamond(s);
      const { type, ids: d } = await diamond(s);
      await succeed(s, type, d.root);
      const all = [d.root, d.left, d.right, d.join];
      for (const from of all) {
        const g = await s.workflows.graph({ jobId: from, limit: 100 });
        assert.deepEqual(ids(g), all, `from ${from}`);
        assert.deepEqual(g.edges, [[d.root, d.left], [d.root, d.right], [d.left, d.join], [d.right, d.join]]);
        assert.equal(g.capped, false);
        assert.deepEqual(g.jobs.map((j) => [j.type, j.status]), [[type, 'succeeded'], [type, 'queued'], [type, 'queued'], [type, 'waiting']]);
      }
      assert.deepEqual(ids(await s.workflows.graph({ jobId: other.ids.join, limit: 100 })), [other.ids.root, other.ids.left, other.ids.right, other.ids.join]);
    });

    it('graph: capped at the limit, keeping the jobs nearest the one asked for and the edges between them', async () => {
      const s = db.storage;
      const c = await chain(s, 6);
      const head = await s.workflows.graph({ jobId: c[0]!, limit: 3 });
      assert.deepEqual([ids(head), head.edges, head.capped], [c.slice(0, 3), [[c[0], c[1]], [c[1], c[2]]], true]);
      const tail = await s.workflows.graph({ jobId: c[5]!, limit: 2 });
      assert.deepEqual([ids(tail), tail.edges, tail.capped], [c.slice(4), [[c[4], c[5]]], true]);
      const mid = await s.workflows.graph({ jobId: c[2]!, limit: 3 });
      assert.deepEqual([ids(mid), mid.capped], [c.slice(1, 4), true]);
      const whole = await s.workflows.graph({ jobId: c[3]!, limit: 6 });
      assert.deepEqual([ids(whole), whole.edges.length, whole.capped], [c, 5, false]);
      const { ids: d } = await diamond(s);
      const near = await s.workflows.graph({ jobId: d.root, limit: 3 });
      assert.deepEqual([ids(near), near.edges, near.capped], [[d.root, d.left, d.right], [[d.root, d.left], [d.root, d.right]], true]);
    });

    it('graph: a job outside any workflow is a workflow of one; an unknown or malformed id none', async () => {
      const s = db.storage;
      const alone = (await s.jobs.insert({ jobs: [newJob(uniq('alone'))] }))[0]?.job;
      assert.deepEqual(await s.workflows.graph({ jobId: alone!.id, limit: 10 }), { jobs: [{ id: alone!.id, type: alone!.type, status: 'queued' }], edges: [], capped: false });
      for (const jobId of ['999999999', 'x1', '-1']) assert.deepEqual(await s.workflows.graph({ jobId, limit: 10 }), { jobs: [], edges: [], capped: false }, jobId);
    });

    it('graph: a parent retention deleted is not followed, not counted against the limit, and no edge leads to it', async () => {
      const s = db.storage;
      const c = await chain(s, 3);
      const type = (await s.jobs.get({ id: c[0]! }))!.type;
      await succeed(s, type, c[0]!);
      const [b] = await claimAll(s, type);
      assert.equal(b?.id, c[1]);
      assert.ok((await s.leases.finish({ items: [finishOf(b!, { status: 'dead', attempt: { outcome: 'dead' } })] }))[0]?.applied);
      await sleep(5);
      await s.jobs.prune({ statuses: ['succeeded'], olderThanMs: 0, limit: 1_000 });
      assert.equal(await s.jobs.get({ id: c[0]! }), null, 'the parent is pruned: its children ended');
      for (const limit of [2, 3]) {
        const g = await s.workflows.graph({ jobId: c[2]!, limit });
        assert.deepEqual([ids(g), g.edges, g.capped], [[c[1], c[2]], [[c[1], c[2]]], false], `limit ${limit}`);
      }
    });

    it('listBatches: newest first, paged below a cursor; batchMembers: in id order, paged above one', async () => {
      const s = db.storage;
      const made = [];
      for (let i = 0; i < 3; i++) made.push(await s.workflows.createBatch({ callback: newJob(uniq('cb')), onSuccessOnly: false }));
      const first = await s.workflows.listBatches({ limit: 2 });
      assert.deepEqual(first.map((b) => b.id), [made[2]!.id, made[1]!.id]);
      assert.deepEqual([first[0]!.state, first[0]!.callbackType, first[0]!.total], ['open', made[2]!.callbackType, 0]);
      assert.deepEqual((await s.workflows.listBatches({ beforeId: made[1]!.id, limit: 1 })).map((b) => b.id), [made[0]!.id]);
      assert.deepEqual(await s.workflows.listBatches({ beforeId: 'x', limit: 5 }), []);

      const type = uniq('member');
      const crossing = await nearPowerOfTen(s);
      const members = await s.workflows.insertFlow({ jobs: Array.from({ length: 5 }, (): FlowJob => ({ ...newJob(type), parents: [] })), onParentFailure: 'cancel', batchId: made[1]!.id });
      if (crossing) assert.ok(members[0]!.id.length < members[4]!.id.length, `ids ${members[0]!.id}…${members[4]!.id} cross a power of ten`);
      await s.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [] }], onParentFailure: 'cancel', batchId: made[2]!.id });
      const page = await s.workflows.batchMembers({ batchId: made[1]!.id, limit: 3 });
      assert.deepEqual(page, members.slice(0, 3).map((m) => ({ id: m.id, type, status: 'queued' })));
      const rest = await s.workflows.batchMembers({ batchId: made[1]!.id, afterId: page[2]!.id, limit: 3 });
      assert.deepEqual(rest.map((m) => m.id), members.slice(3).map((m) => m.id));
      assert.deepEqual(await s.workflows.batchMembers({ batchId: made[0]!.id, limit: 3 }), []);
      assert.deepEqual(await s.workflows.batchMembers({ batchId: '999999999', limit: 3 }), []);
    });
  });
}
