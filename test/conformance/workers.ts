/** Worker registry, migrations and the capability flags. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConformanceHarness } from './index.js';
import { assertBetween, newJob, sleep, uniq, useDb } from './helpers.js';

export function workerTests(h: ConformanceHarness): void {
  describe('workers', () => {
    const db = useDb(h);

    it('register, list, heartbeat, remove', async () => {
      const s = db.storage;
      const [id1, id2] = [uniq('worker'), uniq('worker')];
      const t0 = (await s.now()).getTime();
      await s.workers.register({ id: id1, host: 'host-a', pid: 4242, version: '1.2.3', queues: null, types: ['email', 'billing'] });
      await s.workers.register({ id: id2, host: 'host-b', pid: 7, version: '1.2.3', queues: ['q1', 'q2'], types: ['x'] });
      const t1 = (await s.now()).getTime();
      const list = (await s.workers.list()).filter((w) => w.id === id1 || w.id === id2).sort((a, b) => (a.id === id1 ? -1 : b.id === id1 ? 1 : 0));
      assert.equal(list.length, 2);
      const [w1, w2] = list as [(typeof list)[0], (typeof list)[0]];
      assert.equal(w1.host, 'host-a');
      assert.equal(w1.pid, 4242);
      assert.equal(w1.version, '1.2.3');
      assert.equal(w1.queues, null);
      assert.deepEqual([...w1.types], ['email', 'billing']);
      assert.deepEqual([...(w2.queues ?? [])], ['q1', 'q2']);
      assertBetween(w1.startedAt.getTime(), t0, t1, 'startedAt');
      assertBetween(w1.heartbeatAt.getTime(), t0, t1, 'heartbeatAt');

      await sleep(20);
      const h0 = (await s.now()).getTime();
      await s.workers.heartbeat({ id: id1 });
      const h1 = (await s.now()).getTime();
      const w1b = (await s.workers.list()).find((w) => w.id === id1)!;
      assertBetween(w1b.heartbeatAt.getTime(), h0, h1, 'heartbeatAt after heartbeat');
      assert.equal(w1b.startedAt.getTime(), w1.startedAt.getTime(), 'startedAt unchanged');

      await s.workers.remove({ id: id1 });
      const ids = (await s.workers.list()).map((w) => w.id);
      assert.ok(!ids.includes(id1));
      assert.ok(ids.includes(id2));
      await s.workers.remove({ id: 'no-such-worker' });
      await s.workers.heartbeat({ id: 'no-such-worker' });
    });

    it('workers.prune forgets workers silent for longer than silentForMs', async () => {
      const s = db.storage;
      const [quiet, chatty] = [uniq('worker'), uniq('worker')];
      await s.workers.register({ id: quiet, host: 'h', pid: 1, version: 'v', queues: null, types: ['t'] });
      await s.workers.register({ id: chatty, host: 'h', pid: 2, version: 'v', queues: null, types: ['t'] });
      // margins wide enough that a slow heartbeat or prune (a loaded machine) cannot flip them
      await sleep(1_500);
      await s.workers.heartbeat({ id: chatty });
      const n = await s.workers.prune({ silentForMs: 750 });
      assert.ok(n >= 1, `pruned ${n}`);
      const ids = (await s.workers.list()).map((w) => w.id);
      assert.ok(!ids.includes(quiet));
      assert.ok(ids.includes(chatty));
      assert.equal(await s.workers.prune({ silentForMs: 60_000 }), 0);
    });
  });

  describe('migrate and capabilities', () => {
    const db = useDb(h);

    it('migrate on a migrated database applies nothing; schemaVersion > 0', async () => {
      const s = db.storage;
      const v = await s.schemaVersion();
      assert.ok(Number.isInteger(v) && v > 0, `schemaVersion ${v}`);
      const res = await s.migrate();
      assert.deepEqual(res, { from: v, to: v, applied: [] });
      assert.equal(await s.schemaVersion(), v);
    });

    it('concurrent migrate calls from two connections are safe and idempotent', async () => {
      const s = db.storage;
      const other = await db.connectAnother();
      const v = await s.schemaVersion();
      const results = await Promise.all([s.migrate(), other.migrate(), s.migrate()]);
      for (const r of results) assert.deepEqual(r.applied, []);
      assert.equal(await other.schemaVersion(), v);
    });

    it('declares its dialect and capabilities as booleans', () => {
      const s = db.storage;
      assert.equal(typeof s.dialect, 'string');
      assert.ok(s.dialect.length > 0);
      for (const k of ['multiProcess', 'transactionalEnqueue', 'listenNotify'] as const) assert.equal(typeof s.capabilities[k], 'boolean', k);
    });

    it('subscribe, where wake-ups are pushed: wakes after another connection enqueues a due job', async (t) => {
      const s = db.storage;
      if (!s.capabilities.listenNotify || !s.subscribe) return t.skip('this storage is polled');
      const other = await db.connectAnother();
      let woken = false;
      const unsubscribe = await s.subscribe({ onWake: () => (woken = true) });
      try {
        // enqueue until a wake-up comes: one may have been sent before the subscription was in place
        for (let i = 0; i < 100 && !woken; i++) {
          await other.jobs.insert({ jobs: [newJob(uniq('wake'))] });
          for (let w = 0; w < 10 && !woken; w++) await sleep(20);
        }
        assert.ok(woken, 'woken by an enqueue through another connection');
      } finally {
        await unsubscribe();
      }
    });
  });
}
