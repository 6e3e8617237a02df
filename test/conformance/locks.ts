/**
 * Distributed locks and semaphores: mutual exclusion under concurrent acquirers on several
 * connections, TTL expiry, stale tokens rejected, fences increasing, a semaphore of 3 never
 * holding 4 — not even for a caller asking for more slots. TTLs expire in real time (a server's
 * clock cannot be faked).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '../../src/core/errors.js';
import type { LockGrant } from '../../src/core/schedules.js';
import type { Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { sleep, uniq, useDb } from './helpers.js';

async function connections(connectAnother: () => Promise<Storage>, n: number): Promise<Storage[]> {
  const out: Storage[] = [];
  for (let i = 0; i < n; i++) out.push(await connectAnother());
  return out;
}

export function lockTests(h: ConformanceHarness): void {
  describe('locks', () => {
    const db = useDb(h);

    it('a mutex: second acquire fails while held; release frees it; fences increase', async () => {
      const s = db.storage;
      const name = uniq('lock');
      const a = await s.locks.acquire({ name, owner: 'a', ttlMs: 30_000, slots: 1 });
      assert.ok(a);
      assert.equal(a.slot, 0);
      assert.ok(a.token.length >= 32, 'token has at least 128 bits');
      assert.equal(await s.locks.acquire({ name, owner: 'b', ttlMs: 30_000, slots: 1 }), null);
      const [row] = await s.locks.list({ name });
      assert.equal(row?.owner, 'a');
      assert.equal(row?.fence, a.fence);
      assert.equal(row?.expired, false);
      assert.ok(Math.abs(row!.expiresAt.getTime() - a.expiresAt.getTime()) < 5);
      assert.equal(await s.locks.extend({ name, token: a.token, ttlMs: 60_000 }), true);
      assert.equal(await s.locks.release({ name, token: a.token }), true);
      assert.equal(await s.locks.release({ name, token: a.token }), false, 'a second release is stale');
      assert.equal(await s.locks.extend({ name, token: a.token, ttlMs: 1000 }), false, 'extend after release is stale');
      assert.deepEqual(await s.locks.list({ name }), []);
      const b = await s.locks.acquire({ name, owner: 'b', ttlMs: 30_000, slots: 1 });
      assert.ok(b && b.fence > a.fence, 'fence increases');
      assert.notEqual(b.token, a.token);
    });

    it('TTL expiry lets another acquire; the old holder cannot extend or release', async () => {
      const s = db.storage;
      const name = uniq('ttl');
      const old = await s.locks.acquire({ name, owner: 'old', ttlMs: 80, slots: 1 });
      assert.ok(old);
      await sleep(160);
      assert.equal((await s.locks.list({ name }))[0]?.expired, true, 'listed as expired');
      assert.equal(await s.locks.extend({ name, token: old.token, ttlMs: 30_000 }), false, 'an expired holding cannot be extended');
      const other = await (await db.connectAnother()).locks.acquire({ name, owner: 'new', ttlMs: 30_000, slots: 1 });
      assert.ok(other && other.fence > old.fence);
      assert.equal(await s.locks.extend({ name, token: old.token, ttlMs: 30_000 }), false);
      assert.equal(await s.locks.release({ name, token: old.token }), false);
      assert.equal((await s.locks.list({ name }))[0]?.owner, 'new', 'the new holder keeps it');
    });

    it('a wrong name or token changes nothing', async () => {
      const s = db.storage;
      const name = uniq('wrong');
      const a = await s.locks.acquire({ name, owner: 'a', ttlMs: 30_000, slots: 1 });
      assert.ok(a);
      assert.equal(await s.locks.extend({ name: uniq('other'), token: a.token, ttlMs: 1 }), false);
      assert.equal(await s.locks.release({ name, token: 'not-a-token' }), false);
      assert.equal((await s.locks.list({ name })).length, 1);
    });

    it('race: 8 connections acquire one mutex at once: exactly one wins; fences unique and increasing', async () => {
      const name = uniq('race-lock');
      const conns = await connections(() => db.connectAnother(), 8);
      const fences: number[] = [];
      for (let round = 0; round < 5; round++) {
        const grants = await Promise.all(conns.map((c, i) => c.locks.acquire({ name, owner: `c${i}`, ttlMs: 30_000, slots: 1 })));
        const won = grants.filter((g): g is LockGrant => g !== null);
        assert.equal(won.length, 1, `round ${round}: exactly one holder`);
        fences.push(won[0]!.fence);
        assert.equal(await db.storage.locks.release({ name, token: won[0]!.token }), true);
      }
      assert.deepEqual(fences, [...fences].sort((a, b) => a - b));
      assert.equal(new Set(fences).size, fences.length);
    });

    it('race: a semaphore of 3 under 8 concurrent acquirers never has 4 holders', async () => {
      const name = uniq('sem');
      const conns = await connections(() => db.connectAnother(), 8);
      for (let round = 0; round < 4; round++) {
        const grants = (await Promise.all(conns.map((c, i) => c.locks.acquire({ name, owner: `c${i}`, ttlMs: 30_000, slots: 3 })))).filter((g): g is LockGrant => g !== null);
        assert.equal(grants.length, 3, `round ${round}: three holders`);
        assert.deepEqual(grants.map((g) => g.slot).sort(), [0, 1, 2]);
        assert.equal((await db.storage.locks.list({ name })).filter((l) => !l.expired).length, 3);
        assert.equal(await db.storage.locks.acquire({ name, owner: 'late', ttlMs: 30_000, slots: 3 }), null);
        // free one: exactly one more may enter
        assert.equal(await db.storage.locks.release({ name, token: grants[0]!.token }), true);
        const again = (await Promise.all(conns.map((c) => c.locks.acquire({ name, owner: 'again', ttlMs: 30_000, slots: 3 })))).filter((g) => g !== null);
        assert.equal(again.length, 1);
        for (const g of [...grants.slice(1), ...again]) await db.storage.locks.release({ name, token: g!.token });
      }
    });

    const slotsRefused = (held: number) => (e: unknown) =>
      e instanceof ValidationError && e.code === 'INVALID_OPTION' && new RegExp(`semaphore of ${held} slot`).test(e.message);

    it('a semaphore keeps its slot count while held: another count is refused and writes nothing; once free, a new count is taken', async () => {
      const s = db.storage;
      const name = uniq('slots');
      const grants: LockGrant[] = [];
      for (let i = 0; i < 3; i++) {
        const g = await s.locks.acquire({ name, owner: `h${i}`, ttlMs: 30_000, slots: 3 });
        assert.ok(g, `holder ${i}`);
        grants.push(g);
      }
      await assert.rejects(s.locks.acquire({ name, owner: 'greedy', ttlMs: 30_000, slots: 4 }), slotsRefused(3), 'a 4th holder asking for 4 slots');
      await assert.rejects(s.locks.acquire({ name, owner: 'small', ttlMs: 30_000, slots: 1 }), slotsRefused(3), 'a caller asking for fewer');
      assert.deepEqual((await s.locks.list({ name })).map((l) => l.owner), ['h0', 'h1', 'h2'], 'still the three holders');
      assert.equal(await s.locks.release({ name, token: grants[0]!.token }), true);
      await assert.rejects(s.locks.acquire({ name, owner: 'greedy', ttlMs: 30_000, slots: 4 }), slotsRefused(3), 'held by two: still refused');
      const again = await s.locks.acquire({ name, owner: 'same', ttlMs: 30_000, slots: 3 });
      assert.ok(again && again.fence === grants[2]!.fence + 1, 'the refused calls issued no fence');
      for (const g of [grants[1]!, grants[2]!, again]) assert.equal(await s.locks.release({ name, token: g.token }), true);
      const bigger = [];
      for (let i = 0; i < 5; i++) bigger.push(await s.locks.acquire({ name, owner: `b${i}`, ttlMs: 30_000, slots: 5 }));
      assert.ok(bigger.every((g) => g !== null), 'nobody held it: five slots now');
      await assert.rejects(s.locks.acquire({ name, owner: 'old', ttlMs: 30_000, slots: 3 }), slotsRefused(5));
      for (const g of bigger) await s.locks.release({ name, token: g!.token });
    });

    it('an expired holding does not pin the slot count', async () => {
      const s = db.storage;
      const name = uniq('slots-ttl');
      assert.ok(await s.locks.acquire({ name, owner: 'gone', ttlMs: 50, slots: 2 }));
      await sleep(120);
      const g = await s.locks.acquire({ name, owner: 'new', ttlMs: 30_000, slots: 3 });
      assert.ok(g, 'taken with a new count');
      await assert.rejects(s.locks.acquire({ name, owner: 'x', ttlMs: 30_000, slots: 2 }), slotsRefused(3));
    });

    it('race: 8 connections asking for 3 or 4 slots of one free semaphore: every holder asked for the same count, and no more hold it', async () => {
      const name = uniq('slots-race');
      const conns = await connections(() => db.connectAnother(), 8);
      const asked = conns.map((_, i) => (i % 2 === 0 ? 3 : 4));
      const results = await Promise.allSettled(conns.map((c, i) => c.locks.acquire({ name, owner: `c${i}`, ttlMs: 30_000, slots: asked[i]! })));
      const won = results.flatMap((r, i) => (r.status === 'fulfilled' && r.value !== null ? [asked[i]!] : []));
      assert.ok(won.length >= 3, `at least three hold it (${won.length})`);
      assert.equal(new Set(won).size, 1, `every holder asked for one count: ${won.join(', ')}`);
      assert.ok(won.length <= won[0]!, `no more holders than that count: ${won.length}`);
      for (const r of results) if (r.status === 'rejected') assert.ok(slotsRefused(won[0]!)(r.reason), String(r.reason));
      assert.equal((await db.storage.locks.list({ name })).length, won.length);
    });
  });
}
