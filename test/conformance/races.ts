/**
 * Races between connections on one database. Each test issues the competing writes at once
 * (Promise.all over storages from `connectAnother`) and checks that exactly one side won and
 * that the rows agree with the winner. Leases are short and expire in real time, because a
 * server's clock cannot be faked.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideRescue } from '../../src/core/decide.js';
import type { ClaimedJob, FinishParams, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { finishOf, insertN, mustGet, sleep, uniq, useDb } from './helpers.js';

const POLICY = { kind: 'fixed', delayMs: 0 } as const;
const LEASE_MS = 60;
const PAST_LEASE_MS = 140;

async function connections(connectAnother: () => Promise<Storage>, n: number): Promise<Storage[]> {
  const out: Storage[] = [];
  for (let i = 0; i < n; i++) out.push(await connectAnother());
  return out;
}

async function claimAll(s: Storage, type: string, leaseMs: number): Promise<ClaimedJob[]> {
  return s.leases.claim({ workerId: 'racer', types: [type], queues: null, limit: 1000, leaseMs });
}

function rescueOf(c: ClaimedJob): FinishParams {
  const lease = { id: c.id, type: c.type, leaseToken: c.leaseToken, lockedBy: c.lockedBy, attempts: c.attempts, maxAttempts: c.maxAttempts };
  return { id: c.id, leaseToken: c.leaseToken, ...decideRescue(lease, 'retry', POLICY, () => 0) };
}

export function raceTests(h: ConformanceHarness): void {
  describe('races', () => {
    const db = useDb(h);

    it('(a) many concurrent claimers: every job claimed exactly once, no token reused', async () => {
      const s = db.storage;
      const type = uniq('race-claim');
      const ids = await insertN(s, type, 200);
      const claimers = await connections(() => db.connectAnother(), 8);
      const claims: { worker: string; job: ClaimedJob }[] = [];
      await Promise.all(
        claimers.map(async (c, w) => {
          let empty = 0;
          for (let round = 0; empty < 2; round++) {
            const limit = 1 + ((w + round) % 5);
            const got = await c.leases.claim({ workerId: `claimer-${w}`, types: [type], queues: null, limit, leaseMs: 60_000 });
            assert.ok(got.length <= limit, `claimed ${got.length} > limit ${limit}`);
            for (const job of got) claims.push({ worker: `claimer-${w}`, job });
            empty = got.length === 0 ? empty + 1 : 0;
          }
        }),
      );
      const leftovers = await claimAll(s, type, 60_000);
      for (const job of leftovers) claims.push({ worker: 'racer', job });

      const claimedIds = claims.map((c) => c.job.id);
      const dupes = claimedIds.filter((id, i) => claimedIds.indexOf(id) !== i);
      assert.deepEqual(dupes, [], 'no job claimed twice');
      assert.deepEqual([...claimedIds].sort(), [...ids].sort(), 'every job claimed');
      assert.equal(new Set(claims.map((c) => c.job.leaseToken)).size, 200, 'no token reused');
      const rows = await Promise.all(ids.map((id) => mustGet(s, id)));
      const byId = new Map(claims.map((c) => [c.job.id, c]));
      for (const r of rows) {
        const c = byId.get(r.id)!;
        assert.equal(r.status, 'running');
        assert.equal(r.attempts, 1, `job ${r.id} counted once`);
        assert.equal(r.leaseToken, c.job.leaseToken, `job ${r.id} holds the token its claimer got`);
        assert.equal(r.lockedBy, c.worker);
      }
      const attempts = await Promise.all(ids.map((id) => s.attempts.list({ jobId: id })));
      for (const [i, a] of attempts.entries()) assert.equal(a.length, 1, `job ${ids[i]} has one attempt row`);
    });

    it('(b) an expired lease is rescued exactly once by several concurrent sweepers', async () => {
      const s = db.storage;
      const type = uniq('race-sweep');
      await insertN(s, type, 10);
      const claimed = await claimAll(s, type, LEASE_MS);
      assert.equal(claimed.length, 10);
      const mine = new Set(claimed.map((c) => c.id));
      await sleep(PAST_LEASE_MS);
      const sweepers = await connections(() => db.connectAnother(), 6);
      const seen = await Promise.all(sweepers.map(async (sw) => (await sw.leases.findExpired({ limit: 100 })).filter((e) => mine.has(e.id))));
      for (const found of seen) assert.equal(found.length, 10, 'every sweeper sees every expired lease');
      const results = await Promise.all(
        sweepers.map((sw, i) =>
          sw.leases.finish({ items: (seen[i] ?? []).map((lease) => ({ id: lease.id, leaseToken: lease.leaseToken, ...decideRescue(lease, 'retry', POLICY, () => 0) })) }),
        ),
      );
      for (const c of claimed) {
        const wins = results.flat().filter((r) => r.id === c.id && r.applied).length;
        assert.equal(wins, 1, `job ${c.id} rescued ${wins} times`);
        const j = await mustGet(s, c.id);
        assert.equal(j.status, 'failed');
        assert.equal(j.attempts, 1);
        assert.equal(j.leaseToken, null);
        const a = await s.attempts.list({ jobId: c.id });
        assert.deepEqual(a.map((x) => x.outcome), ['lease_expired']);
      }
    });

    it('(b2) concurrent batched finishes over the same rows in opposite orders: no error, each row lands once', async () => {
      const s = db.storage;
      const type = uniq('race-order');
      await insertN(s, type, 20);
      const claimed = await claimAll(s, type, LEASE_MS);
      await sleep(PAST_LEASE_MS);
      const sweepers = await connections(() => db.connectAnother(), 4);
      const batches = sweepers.map((_, i) => (i % 2 === 0 ? claimed : [...claimed].reverse()).map(rescueOf));
      const results = await Promise.all(sweepers.map((sw, i) => sw.leases.finish({ items: batches[i]! })));
      for (const [i, r] of results.entries()) assert.deepEqual(r.map((x) => x.id), batches[i]!.map((b) => b.id), 'results in input order');
      for (const c of claimed) assert.equal(results.flat().filter((r) => r.id === c.id && r.applied).length, 1, `job ${c.id}`);
    });

    it('(c) a finishing worker and the sweeper on one expired lease: exactly one lands, rows agree with it', async () => {
      const s = db.storage;
      const type = uniq('race-finish');
      await insertN(s, type, 20);
      const claimed = await claimAll(s, type, LEASE_MS);
      await sleep(PAST_LEASE_MS);
      const [w1, w2, s1, s2] = await connections(() => db.connectAnother(), 4);
      const outcomes = await Promise.all(
        claimed.map(async (c, i) => {
          const worker = i % 2 === 0 ? w1! : w2!;
          const sweeper = i % 2 === 0 ? s2! : s1!;
          const [[fin], [res]] = await Promise.all([worker.leases.finish({ items: [finishOf(c)] }), sweeper.leases.finish({ items: [rescueOf(c)] })]);
          return { c, worker: fin!.applied, sweeper: res!.applied };
        }),
      );
      for (const { c, worker, sweeper } of outcomes) {
        assert.equal(Number(worker) + Number(sweeper), 1, `job ${c.id}: worker ${worker}, sweeper ${sweeper}`);
        const j = await mustGet(s, c.id);
        const [a, ...more] = await s.attempts.list({ jobId: c.id });
        assert.equal(more.length, 0);
        if (worker) {
          assert.equal(j.status, 'succeeded');
          assert.ok(j.finishedAt);
          assert.equal(j.lastErrorCode, null);
          assert.equal(a!.outcome, 'succeeded');
        } else {
          assert.equal(j.status, 'failed');
          assert.equal(j.finishedAt, null);
          assert.equal(j.lastErrorCode, 'LEASE_EXPIRED');
          assert.equal(a!.outcome, 'lease_expired');
        }
        assert.equal(j.leaseToken, null);
        assert.ok(a!.finishedAt);
      }
    });

    it('(d) heartbeat against the sweeper on an expired lease: either the lease holds or the rescue lands, never both', async () => {
      const s = db.storage;
      const type = uniq('race-hb');
      await insertN(s, type, 20);
      const claimed = await claimAll(s, type, LEASE_MS);
      await sleep(PAST_LEASE_MS);
      const [hbConn, swConn] = await connections(() => db.connectAnother(), 2);
      const outcomes = await Promise.all(
        claimed.map(async (c) => {
          const [hb, [res]] = await Promise.all([
            hbConn!.leases.heartbeat({ leases: [{ id: c.id, leaseToken: c.leaseToken }], leaseMs: 60_000 }),
            swConn!.leases.finish({ items: [rescueOf(c)] }),
          ]);
          return { c, held: hb.lost.length === 0, rescued: res!.applied, lost: hb.lost };
        }),
      );
      for (const { c, held, rescued, lost } of outcomes) {
        assert.equal(Number(held) + Number(rescued), 1, `job ${c.id}: heartbeat held ${held}, rescue ${rescued}`);
        const j = await mustGet(s, c.id);
        if (held) {
          assert.equal(j.status, 'running');
          assert.equal(j.leaseToken, c.leaseToken);
        } else {
          assert.deepEqual(lost, [{ id: c.id, status: 'failed' }]);
          assert.equal(j.status, 'failed');
        }
      }
    });

    it('(e) an operator cancel against claimers: the job ends cancelled, a claimed attempt closes as cancelled', async () => {
      const s = db.storage;
      const type = uniq('race-cancel');
      const ids = await insertN(s, type, 20);
      const [claimer, admin] = await connections(() => db.connectAnother(), 2);
      const [claimed] = await Promise.all([
        claimAll(claimer!, type, 60_000),
        Promise.all(ids.map((id) => admin!.jobs.cancel({ id }))),
      ]);
      const claimedIds = new Set(claimed.map((c) => c.id));
      for (const id of ids) {
        const j = await mustGet(s, id);
        assert.equal(j.status, 'cancelled', `job ${id}`);
        const a = await s.attempts.list({ jobId: id });
        assert.equal(a.length, claimedIds.has(id) ? 1 : 0);
        if (a[0]) assert.equal(a[0].outcome, 'cancelled');
      }
    });
  });
}
