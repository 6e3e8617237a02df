/**
 * MySQL/MariaDB effect ledger under load: a never-seen key is reserved by a locking read of
 * its job and one INSERT, and recorded by one UPDATE (no locking read of a missing key, which InnoDB
 * answers with a gap lock), many leases reserving neighbouring new keys at once meet no
 * deadlock, and a record takes the job row before the effect row, as a reserve does. Batches
 * (the worker's concurrent `ctx.once` calls) are one transaction each and meet no deadlock either. The
 * ledger's semantics are the conformance suite's (test/conformance/effects.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { createPool } from '../../src/storage/mysql/db.js';
import { serverFor } from '../support/databases.js';
import { job, throwawayDatabase } from './mysql-support.js';

const url = await serverFor('mysql', 'mysql specific: effect ledger');

const ER_LOCK_DEADLOCK = 1213;

/** A pool that records each statement's `-- leasehold <name>` header, and each deadlock a statement met. */
function watchedPool(pool: mysql.Pool) {
  const sent: string[] = [];
  let deadlocks = 0;
  const watch = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(t, prop, receiver) {
        const v = Reflect.get(t, prop, receiver) as unknown;
        if (prop === 'query' && typeof v === 'function') {
          return async (opts: { sql: string }, ...rest: unknown[]) => {
            for (const m of opts.sql.matchAll(/-- leasehold (\w+)/g)) sent.push(m[1]!);
            try {
              return await (v as (...a: unknown[]) => Promise<unknown>).call(t, opts, ...rest);
            } catch (e) {
              if ((e as { errno?: unknown }).errno === ER_LOCK_DEADLOCK) deadlocks++;
              throw e;
            }
          };
        }
        if (prop === 'getConnection' && typeof v === 'function') {
          return async () => watch(await (v as () => Promise<object>).call(t));
        }
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
  return { pool: watch(pool), sent, deadlocks: () => deadlocks };
}

describe('mysql specific: effect ledger', { skip: url === null }, () => {
  const { dbUrl, db, make, pools } = throwawayDatabase(url);

  const newPool = (size: number): mysql.Pool => {
    const p = createPool(dbUrl(db), size, 10_000);
    pools.push(p);
    return p;
  };

  /** Tables under `prefix`, and one job running under a 60 s lease. */
  const oneRunningJob = async (prefix: string) => {
    const s = make({ tablePrefix: prefix });
    await s.migrate();
    await s.jobs.insert({ jobs: [job('fx')] });
    const [c] = await s.leases.claim({ workerId: 'w', types: ['fx'], queues: null, limit: 1, leaseMs: 60_000 });
    return { s, c: c! };
  };

  it('a new key is reserved by a locking read of its job and one INSERT (two round trips) and recorded by one UPDATE; a seen key reads the ledger in a transaction', async () => {
    const watched = watchedPool(newPool(2));
    const s = make({ pool: watched.pool, tablePrefix: 'one_' });
    await s.migrate();
    await s.jobs.insert({ jobs: [job('fx')] });
    const [c] = await s.leases.claim({ workerId: 'w', types: ['fx'], queues: null, limit: 1, leaseMs: 30_000 });
    const p = { key: 'mail:1', jobId: c!.id, leaseToken: c!.leaseToken };

    watched.sent.length = 0;
    assert.deepEqual(await s.effects.reserve(p), { state: 'reserved' });
    assert.deepEqual(watched.sent, ['begin', 'leaseHeld', 'reserveNewEffect', 'commit']);
    watched.sent.length = 0;
    assert.equal(await s.effects.complete({ ...p, result: { id: 7 } }), true);
    assert.deepEqual(watched.sent, ['completeEffect']);

    watched.sent.length = 0;
    assert.deepEqual(await s.effects.reserve(p), { state: 'done', result: { id: 7 } });
    assert.deepEqual(watched.sent, ['begin', 'leaseHeld', 'reserveNewEffect', 'rollback', 'begin', 'leaseHeld', 'effectForUpdate', 'commit']);
  });

  it('200 leases reserving and recording neighbouring new keys at once meet no deadlock', async () => {
    const watched = watchedPool(newPool(20));
    const s = make({ pool: watched.pool, tablePrefix: 'many_' });
    await s.migrate();
    const N = 200;
    await s.jobs.insert({ jobs: Array.from({ length: N }, () => job('fx')) });
    const claimed = await s.leases.claim({ workerId: 'w', types: ['fx'], queues: null, limit: N, leaseMs: 60_000 });
    assert.equal(claimed.length, N);
    const params = claimed.map((c, i) => ({ key: `send:${i}`, jobId: c.id, leaseToken: c.leaseToken }));

    const reserved = await Promise.all(params.map((p) => s.effects.reserve(p)));
    assert.ok(reserved.every((r) => r.state === 'reserved'), JSON.stringify(reserved.filter((r) => r.state !== 'reserved')));
    const recorded = await Promise.all(params.map((p, i) => s.effects.complete({ ...p, result: i })));
    assert.ok(recorded.every(Boolean));
    assert.equal(await s.effects.count(), N);
    assert.equal(watched.deadlocks(), 0, 'statements that met a deadlock (each was retried)');
  });

  it('batches: new keys in one transaction, records in another; 200 leases in 8 concurrent batches of neighbouring keys meet no deadlock', async () => {
    const watched = watchedPool(newPool(20));
    const s = make({ pool: watched.pool, tablePrefix: 'bat_' });
    await s.migrate();
    const N = 200;
    await s.jobs.insert({ jobs: Array.from({ length: N }, () => job('fx')) });
    const claimed = await s.leases.claim({ workerId: 'w', types: ['fx'], queues: null, limit: N, leaseMs: 60_000 });
    // batch b holds keys b, b+8, b+16…: every batch's keys sit between the others'
    const batches = Array.from({ length: 8 }, (_, b) => claimed.filter((_c, i) => i % 8 === b).map((c) => ({ key: `send:${c.id}`, jobId: c.id, leaseToken: c.leaseToken })));

    watched.sent.length = 0;
    const [first] = batches;
    assert.deepEqual(await s.effects.reserveMany!({ items: first!.slice(0, 3) }), [{ state: 'reserved' }, { state: 'reserved' }, { state: 'reserved' }]);
    assert.deepEqual(watched.sent, ['begin', 'effectKeysSeen', 'leasesHeld', 'reserveNewEffects', 'commit']);
    watched.sent.length = 0;
    assert.deepEqual(await s.effects.completeMany!({ items: first!.slice(0, 3).map((p) => ({ ...p, result: 1 })) }), [true, true, true]);
    assert.deepEqual(watched.sent, ['effectKeyCollation', 'readCommitted', 'begin', 'completeEffects', 'commit'], 'one statement records the batch (the key collation is read once)');
    // one of these is not pending (recorded above): the batch's statement is rolled back, and
    // each record goes alone, in one transaction, so each gets its own answer
    watched.sent.length = 0;
    const [again, fresh] = [first![0]!, first![3]!];
    assert.deepEqual(await s.effects.reserve(fresh), { state: 'reserved' });
    watched.sent.length = 0;
    assert.deepEqual(await s.effects.completeMany!({ items: [{ ...again, result: 2 }, { ...fresh, result: 3 }] }), [false, true]);
    assert.deepEqual(watched.sent, ['readCommitted', 'begin', 'completeEffects', 'rollback', 'begin', 'completeEffect', 'completeEffect', 'commit']);
    assert.deepEqual(await s.effects.reserve(again), { state: 'done', result: 1 }, 'the rolled-back batch changed nothing');
    // a retry's batch: a done key is answered from the batch's own read (done is final), a key
    // pending under this lease goes the one-key way, a new key is inserted with the others
    const pendingKey = { ...first![4]!, key: `${first![4]!.key}:p` };
    assert.deepEqual(await s.effects.reserve(pendingKey), { state: 'reserved' });
    const newKey = { ...first![4]!, key: `${first![4]!.key}:n` };
    watched.sent.length = 0;
    assert.deepEqual(await s.effects.reserveMany!({ items: [{ ...first![1]! }, pendingKey, newKey] }), [{ state: 'done', result: 1 }, { state: 'reserved' }, { state: 'reserved' }]);
    assert.deepEqual(watched.sent, ['begin', 'effectKeysSeen', 'leasesHeld', 'reserveNewEffects', 'commit', 'begin', 'leaseHeld', 'effectForUpdate', 'commit']);
    assert.deepEqual(await s.effects.reserve({ ...first![1]!, leaseToken: 'not-the-lease' }), { state: 'lost' });
    assert.deepEqual(await s.effects.reserveMany!({ items: [{ ...first![1]!, leaseToken: 'not-the-lease' }] }), [{ state: 'lost' }], 'done, but not for a lease that is gone');

    const reserved = (await Promise.all(batches.map((b) => s.effects.reserveMany!({ items: b })))).flat();
    assert.equal(reserved.filter((r) => r.state === 'reserved').length, N - 4);
    assert.equal(reserved.filter((r) => r.state === 'done').length, 4, 'the four recorded above');
    const recorded = (await Promise.all(batches.map((b) => s.effects.completeMany!({ items: b.map((p) => ({ ...p, result: p.key })) })))).flat();
    assert.equal(recorded.filter(Boolean).length, N - 4);
    assert.equal(await s.effects.count(), N + 2, 'one per key, with the two retry keys');
    assert.equal(watched.deadlocks(), 0, 'statements that met a deadlock (each was retried)');
  });

  it('a batch of reserves share-locks its jobs: one whose lease is being taken over waits, then answers lost', async () => {
    const { s, c } = await oneRunningJob('zom_');
    const rescuer = await mysql.createConnection(dbUrl(db));
    try {
      // a sweeper's rescue of this lease, not committed yet
      await rescuer.query('START TRANSACTION');
      await rescuer.query(`UPDATE zom_jobs SET status = 'failed', lease_token = NULL WHERE id = ?`, [c.id]);
      const asked = s.effects.reserveMany!({ items: [{ key: 'zombie:1', jobId: c.id, leaseToken: c.leaseToken }] });
      // a plain read would see the lease as it was before the rescue, and reserve for a zombie
      const early = await Promise.race([asked.then(() => 'answered'), new Promise((r) => setTimeout(() => r('waiting'), 500))]);
      await rescuer.query('COMMIT');
      assert.equal(early, 'waiting', 'the batch waited for the rescue');
      assert.deepEqual(await asked, [{ state: 'lost' }]);
      assert.equal(await s.effects.count(), 0);
    } finally {
      await rescuer.end();
    }
  });

  it('a key another batch inserts meanwhile: the batch is asked again one key at a time, each item answered as alone', async () => {
    const s = make({ tablePrefix: 'dup_' });
    await s.migrate();
    await s.jobs.insert({ jobs: [job('fx'), job('fx')] });
    const [a, other] = await s.leases.claim({ workerId: 'w', types: ['fx'], queues: null, limit: 2, leaseMs: 60_000 });
    const ours = (key: string) => ({ key, jobId: a!.id, leaseToken: a!.leaseToken });
    assert.deepEqual(await s.effects.reserve(ours('done:1')), { state: 'reserved' });
    assert.equal(await s.effects.complete({ ...ours('done:1'), result: 'sent' }), true);
    const inserter = await mysql.createConnection(dbUrl(db));
    try {
      // the other job's worker inserts `race:1`, not committed yet: our insert of it waits, then fails
      await inserter.query('START TRANSACTION');
      await inserter.query(`INSERT INTO dup_effects (effect_key, job_id, lease_token, state, created_at) VALUES ('race:1', ?, ?, 'pending', NOW(6))`, [other!.id, other!.leaseToken]);
      const asked = s.effects.reserveMany!({ items: [ours('race:1'), { key: 'lost:1', jobId: a!.id, leaseToken: 'not-this-lease' }, ours('done:1'), ours('fresh:1')] });
      await new Promise((r) => setTimeout(r, 300));
      await inserter.query('COMMIT');
      assert.deepEqual(await asked, [{ state: 'busy' }, { state: 'lost' }, { state: 'done', result: 'sent' }, { state: 'reserved' }]);
    } finally {
      await inserter.end();
    }
  });

  it('a batched record finds its effect by key: a lock on another effect of the same job does not hold it up', async () => {
    const { s, c } = await oneRunningJob('key_');
    const ps = Array.from({ length: 30 }, (_, i) => ({ key: `item:${i}`, jobId: c.id, leaseToken: c.leaseToken }));
    assert.ok((await s.effects.reserveMany!({ items: ps })).every((r) => r.state === 'reserved'));
    const holder = await mysql.createConnection(dbUrl(db));
    try {
      await holder.query('START TRANSACTION');
      await holder.query(`SELECT state FROM key_effects WHERE effect_key = 'item:29' FOR UPDATE`);
      const recording = s.effects.completeMany!({ items: [{ ...ps[0]!, result: 0 }] });
      const first = await Promise.race([recording.then(() => 'recorded'), new Promise((r) => setTimeout(() => r('waited'), 3_000))]);
      await holder.query('COMMIT');
      assert.equal(first, 'recorded', 'the record did not wait for the unrelated row');
      assert.deepEqual(await recording, [true]);
    } finally {
      await holder.end();
    }
  });

  it('a record waiting for its job row holds no lock on the effect row (the job row first, as a reserve takes them)', async () => {
    const { s, c } = await oneRunningJob('ord_');
    const mine = { key: 'receipt:9', jobId: c.id, leaseToken: c.leaseToken };
    assert.deepEqual(await s.effects.reserve(mine), { state: 'reserved' });
    // another transaction (a heartbeat, a finish) holds the job row
    const holder = await mysql.createConnection(dbUrl(db));
    const prober = await mysql.createConnection(dbUrl(db));
    try {
      await holder.query('START TRANSACTION');
      await holder.query('SELECT id FROM ord_jobs WHERE id = ? FOR UPDATE', [c.id]);
      const recording = s.effects.complete({ ...mine, result: 'sent' });
      const waiting = async () => Number(((await prober.query(`SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`))[0] as { n: number }[])[0]!.n);
      for (let i = 0; i < 100 && (await waiting()) === 0; i++) await new Promise((r) => setTimeout(r, 20));
      // the effect row is free meanwhile: a locking read of it does not wait for the record
      await prober.query('SET SESSION innodb_lock_wait_timeout = 1');
      await prober.query('START TRANSACTION');
      const [rows] = await prober.query('SELECT state FROM ord_effects WHERE effect_key = ? FOR UPDATE', [mine.key]);
      assert.deepEqual(rows, [{ state: 'pending' }]);
      await prober.query('COMMIT');
      await holder.query('COMMIT');
      assert.equal(await recording, true);
    } finally {
      await holder.end();
      await prober.end();
    }
  });
});
