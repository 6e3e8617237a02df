/**
 * A write in the caller's own transaction takes nothing more from the storage's pool: with a
 * pool of 3 (one parked for wake-ups, one the caller's), the storage still answers a read of
 * its own while the caller's transaction stays open.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { serverFor } from '../support/databases.js';
import { job, throwawayDatabase } from './mysql-support.js';

const url = await serverFor('mysql', 'mysql caller transaction on a small pool');

describe("mysql: the caller's transaction on a small pool", { skip: url === null, timeout: 120_000 }, () => {
  const { make, dbUrl, db, pools } = throwawayDatabase(url);

  it('an insert and a finish in the open transaction leave the pool free for the storage', async () => {
    const pool = mysql.createPool({ uri: dbUrl(db), connectionLimit: 3 });
    pools.push(pool);
    const s = make({ pool });
    await s.migrate();
    const unsubscribe = await s.subscribe!({ onWake: () => {} });
    const tx = await pool.getConnection();
    try {
      await tx.query('START TRANSACTION');
      const [row] = await s.jobs.insert({ jobs: [job('caller-tx')], tx });
      assert.ok(row);
      // the pool's third connection must still be free: a read outside the transaction answers
      const seen = await Promise.race([s.jobs.get({ id: row.job.id }), new Promise<'stuck'>((r) => setTimeout(() => r('stuck'), 5_000))]);
      assert.notEqual(seen, 'stuck', 'a read of the storage waited for the caller to commit');
      await tx.query('COMMIT');
    } finally {
      tx.release();
      await unsubscribe();
    }
  });
});
