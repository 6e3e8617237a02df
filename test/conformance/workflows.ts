/** workflows.insertFlow and what a parent's finish does to its children (src/core/storage-workflows.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FlowJob, JobRow, ParentPolicy, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { WRONG_TOKEN, finishOf, mustGet, newJob, uniq, useDb } from './helpers.js';
import { workflowRetentionTests } from './workflow-retention.js';
import { storedParentTests } from './workflow-stored-parents.js';

const ERR = { code: 'E_FLOW', message: 'broke' };

/** root → (left, right) → join, all of one fresh type. */
export async function diamond(s: Storage, onParentFailure: ParentPolicy = 'cancel', type = uniq('flow')): Promise<{ type: string; ids: Record<'root' | 'left' | 'right' | 'join', string>; rows: JobRow[] }> {
  const job = (parents: number[], over: Partial<FlowJob> = {}): FlowJob => ({ ...newJob(type), parents, ...over });
  const rows = await s.workflows.insertFlow({ jobs: [job([]), job([0]), job([0]), job([1, 2])], onParentFailure });
  return { type, rows, ids: { root: rows[0]!.id, left: rows[1]!.id, right: rows[2]!.id, join: rows[3]!.id } };
}

export const claimAll = (s: Storage, type: string, workerId = 'w') => s.leases.claim({ workerId, types: [type], queues: null, limit: 10, leaseMs: 30_000 });

/** Claim what is due, succeed job `id`, hand the others back. */
export async function succeed(s: Storage, type: string, id: string): Promise<void> {
  const got = await claimAll(s, type);
  assert.ok(got.some((j) => j.id === id), `job ${id} is claimable`);
  const back = { status: 'queued', runAfterMs: 0, uncountAttempt: true, attempt: { outcome: 'handed_back' } } as const;
  const res = await s.leases.finish({ items: got.map((c) => finishOf(c, c.id === id ? {} : back)) });
  assert.ok(res.every((r) => r.applied));
}

export function workflowTests(h: ConformanceHarness): void {
  workflowRetentionTests(h);
  storedParentTests(h);
  describe('workflows: dependencies', () => {
    const db = useDb(h);

    it('insertFlow: jobs with parents wait, counting them; only the root is claimable', async () => {
      const s = db.storage;
      const { type, rows, ids } = await diamond(s);
      assert.deepEqual(rows.map((r) => [r.status, r.pendingParents]), [['queued', undefined], ['waiting', 1], ['waiting', 1], ['waiting', 2]]);
      assert.deepEqual((await mustGet(s, ids.join)).pendingParents, 2);
      assert.deepEqual((await claimAll(s, type)).map((c) => c.id), [ids.root]);
      assert.deepEqual(await claimAll(s, type), [], 'nothing else while the root runs');
    });

    it('dependencies: a job\'s parents and children in id order, at most the limit; none for a job outside a workflow', async () => {
      const s = db.storage;
      const { ids } = await diamond(s);
      assert.deepEqual(await s.workflows.dependencies({ jobId: ids.join, limit: 10 }), { parents: [ids.left, ids.right], children: [] });
      assert.deepEqual(await s.workflows.dependencies({ jobId: ids.root, limit: 10 }), { parents: [], children: [ids.left, ids.right] });
      assert.deepEqual(await s.workflows.dependencies({ jobId: ids.left, limit: 10 }), { parents: [ids.root], children: [ids.join] });
      assert.deepEqual(await s.workflows.dependencies({ jobId: ids.root, limit: 1 }), { parents: [], children: [ids.left] });
      const [plain] = await s.jobs.insert({ jobs: [newJob(uniq('plain'))] });
      assert.deepEqual(await s.workflows.dependencies({ jobId: plain!.job.id, limit: 10 }), { parents: [], children: [] });
      assert.deepEqual(await s.workflows.dependencies({ jobId: 'nope', limit: 10 }), { parents: [], children: [] });
    });

    it("a parent's success releases its children; a join waits for its last parent", async () => {
      const s = db.storage;
      const { type, ids } = await diamond(s);
      await succeed(s, type, ids.root);
      assert.equal((await mustGet(s, ids.left)).status, 'queued');
      assert.equal((await mustGet(s, ids.join)).status, 'waiting');
      const t0 = (await s.now()).getTime();
      await succeed(s, type, ids.left);
      assert.deepEqual([(await mustGet(s, ids.join)).status, (await mustGet(s, ids.join)).pendingParents], ['waiting', 1]);
      await succeed(s, type, ids.right);
      const join = await mustGet(s, ids.join);
      assert.deepEqual([join.status, join.pendingParents], ['queued', 0]);
      assert.ok(join.runAt.getTime() >= t0 - 5, 'due from its release, not from its insert');
      await succeed(s, type, ids.join);
    });

    it('a parent that fails and will retry releases nothing; a finish that does not land releases nothing', async () => {
      const s = db.storage;
      const { type, ids } = await diamond(s);
      const [c] = await claimAll(s, type);
      assert.equal((await s.leases.finish({ items: [finishOf({ id: c!.id, leaseToken: WRONG_TOKEN })] }))[0]!.applied, false);
      await s.leases.finish({ items: [finishOf(c!, { status: 'failed', runAfterMs: 0, error: ERR, attempt: { outcome: 'failed', error: ERR } })] });
      assert.equal((await mustGet(s, ids.left)).status, 'waiting');
      await succeed(s, type, ids.root);
      assert.equal((await mustGet(s, ids.left)).status, 'queued');
    });

    it("a released child with a later run_at keeps it; it is not claimable before", async () => {
      const s = db.storage;
      const type = uniq('flow-delay');
      const rows = await s.workflows.insertFlow({ jobs: [{ ...newJob(type), parents: [] }, { ...newJob(type, { runAfterMs: 3_600_000 }), parents: [0] }], onParentFailure: 'cancel' });
      await succeed(s, type, rows[0]!.id);
      const child = await mustGet(s, rows[1]!.id);
      assert.equal(child.status, 'queued');
      assert.equal(child.runAt.getTime(), rows[1]!.runAt.getTime());
      assert.deepEqual(await claimAll(s, type), []);
    });

    for (const end of ['dead', 'cancelled'] as const) {
      it(`policy cancel: a parent ending ${end} cancels every waiting descendant; hold keeps them waiting`, async () => {
        const s = db.storage;
        const cancel = await diamond(s, 'cancel');
        const hold = await diamond(s, 'hold');
        for (const d of [cancel, hold]) {
          const [c] = await claimAll(s, d.type);
          const err = end === 'dead' ? ERR : { code: 'CANCELLED', message: 'stop' };
          assert.equal((await s.leases.finish({ items: [finishOf(c!, { status: end, error: err, attempt: { outcome: end, error: err } })] }))[0]!.applied, true);
        }
        for (const k of ['left', 'right', 'join'] as const) {
          const j = await mustGet(s, cancel.ids[k]);
          assert.equal(j.status, 'cancelled', k);
          assert.equal(j.lastErrorCode, 'PARENT_FAILED');
          assert.match(j.lastError ?? '', new RegExp(`job ${cancel.ids.root} it depends on ended ${end}`));
          assert.ok(j.finishedAt);
          assert.equal((await mustGet(s, hold.ids[k])).status, 'waiting', `${k} held`);
        }
        assert.deepEqual(await claimAll(s, hold.type), [], 'held jobs are never claimed');
      });
    }

    it('under 8 concurrent claimers on several connections, no child is claimed before all its parents succeeded; every job runs once', async () => {
      const type = uniq('flow-race');
      const stores = [db.storage, ...(await Promise.all(Array.from({ length: 3 }, () => db.connectAnother())))];
      // 12 diamonds and one fan-in of 12 parents into one join
      const parentsOf = new Map<string, string[]>();
      for (let i = 0; i < 12; i++) {
        const d = await diamond(db.storage, 'cancel', type);
        parentsOf.set(d.ids.left, [d.ids.root]).set(d.ids.right, [d.ids.root]).set(d.ids.join, [d.ids.left, d.ids.right]);
      }
      const fan = await db.storage.workflows.insertFlow({ jobs: [...Array.from({ length: 12 }, () => ({ ...newJob(type), parents: [] })), { ...newJob(type), parents: [...Array(12).keys()] }], onParentFailure: 'cancel' });
      parentsOf.set(fan[12]!.id, fan.slice(0, 12).map((r) => r.id));
      const total = 12 * 4 + 13;
      const claimed: string[] = [];
      const early: string[] = [];
      const until = Date.now() + 60_000;
      await Promise.all(Array.from({ length: 8 }, async (_, w) => {
        const s = stores[w % stores.length]!;
        while (claimed.length < total && Date.now() < until) {
          const got = await s.leases.claim({ workerId: `w${w}`, types: [type], queues: null, limit: 2, leaseMs: 30_000 });
          if (got.length === 0) {
            await new Promise((r) => setTimeout(r, 5));
            continue;
          }
          for (const c of got) {
            claimed.push(c.id);
            for (const p of parentsOf.get(c.id) ?? []) {
              if ((await s.jobs.get({ id: p }))?.status !== 'succeeded') early.push(`${c.id} before ${p}`);
            }
          }
          const res = await s.leases.finish({ items: got.map((c) => finishOf(c)) });
          assert.ok(res.every((r) => r.applied));
        }
      }));
      assert.deepEqual(early, []);
      assert.equal(claimed.length, total, 'every job claimed');
      assert.equal(new Set(claimed).size, total, 'none twice');
      assert.equal((await mustGet(db.storage, fan[12]!.id)).status, 'succeeded');
    });
  });
}
