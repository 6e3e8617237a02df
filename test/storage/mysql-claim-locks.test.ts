/**
 * MySQL/MariaDB: a worker never waits on a caller's open transaction that enqueued a job.
 * Connection A inserts a due job through jobs.insert({ tx }) and keeps its transaction open;
 * on a table of 0, 1, 3, 10 and 1000 other due jobs, the claim (plain and flow-limited),
 * heartbeat, finish and the sweeper's read run on sessions that may not wait for a row lock
 * at all (innodb_lock_wait_timeout = 1: any wait fails at once), so a lock wait is an error,
 * whatever the clock says. The open job sits first or last in claim order.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import type { ClaimParams } from '../../src/core/storage.js';
import { serverFor } from '../support/databases.js';
import { job, throwawayDatabase } from './mysql-support.js';

const url = await serverFor('mysql', 'mysql claim locks');

const SIZES = [0, 1, 3, 10, 1000];

describe('mysql: a claim never waits on an uncommitted enqueue', { skip: url === null }, () => {
  const { db, dbUrl, make, pools } = throwawayDatabase(url);

  /** A storage on a pool whose sessions fail a row-lock wait at once, and the caller's own storage. */
  const setup = async (prefix: string) => {
    const caller = make({ tablePrefix: prefix });
    await caller.migrate();
    const noWait = mysql.createPool({ uri: dbUrl(db), connectionLimit: 3 });
    pools.push(noWait);
    noWait.pool.on('connection', (c) => void c.query('SET SESSION innodb_lock_wait_timeout = 1'));
    const callerPool = mysql.createPool({ uri: dbUrl(db), connectionLimit: 1 });
    pools.push(callerPool);
    return { caller, worker: make({ pool: noWait, tablePrefix: prefix }), callerPool };
  };

  for (const size of SIZES) {
    for (const openAt of ['first', 'last'] as const) {
      it(`${size} committed due jobs, the open one ${openAt} in claim order: claim, heartbeat, finish and sweep without waiting`, async () => {
        const { caller, worker, callerPool } = await setup(`cl${size}${openAt[0]}_`);
        const type = 'locks';
        const limited = 'locks-limited';
        const committed = size === 0 ? [] : (await caller.jobs.insert({ jobs: Array.from({ length: size }, () => job(type)) })).map((r) => r.job.id);
        const committedLimited = (await caller.jobs.insert({ jobs: [job(limited)] })).map((r) => r.job.id);
        const conn = await callerPool.getConnection();
        try {
          await conn.beginTransaction();
          const priority = openAt === 'first' ? -1 : 1;
          const [open] = await caller.jobs.insert({ jobs: [job(type, { priority }), job(limited, { priority })], tx: conn });
          const claimOf = (types: string[], over: Partial<ClaimParams> = {}): ClaimParams => ({ workerId: 'w', types, queues: null, limit: size + 10, leaseMs: 60_000, ...over });

          const got = await worker.leases.claim(claimOf([type]));
          assert.deepEqual(got.map((j) => j.id).sort(), [...committed].sort(), 'the committed due jobs, not the open one');
          const flowGot = await worker.leases.claim(claimOf([limited], { flow: { [limited]: { maxRunning: 5 } } }));
          assert.deepEqual(flowGot.map((j) => j.id), committedLimited, 'a limited claim too');

          const all = [...got, ...flowGot];
          assert.deepEqual(await worker.leases.heartbeat({ leases: all.map((j) => ({ id: j.id, leaseToken: j.leaseToken })), leaseMs: 60_000 }), { lost: [] });
          assert.deepEqual(await worker.leases.findExpired({ limit: 10 }), []);
          const done = await worker.leases.finish({ items: all.map((j) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) });
          assert.equal(done.filter((r) => r.applied).length, all.length);
          assert.deepEqual(await worker.leases.claim(claimOf([type, limited])), [], 'nothing due but the open job');

          await conn.commit();
          assert.deepEqual((await worker.leases.claim(claimOf([type]))).map((j) => j.id), [open!.job.id], 'claimed once committed');
        } finally {
          await conn.rollback().catch(() => undefined);
          conn.release();
        }
      });
    }
  }
});
