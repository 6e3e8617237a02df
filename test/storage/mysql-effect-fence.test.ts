/**
 * MySQL/MariaDB: the one-key effect reserve is fenced by a locking read of the job row under
 * its lease token, whatever the session's isolation level. Under READ COMMITTED a plain
 * INSERT … SELECT reads the job as last committed: while a sweeper's rescue of the lease held
 * the row (not committed yet), it reserved the effect for the zombie that lost the lease.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { serverFor } from '../support/databases.js';
import { job, throwawayDatabase } from './mysql-support.js';

const url = await serverFor('mysql', 'mysql specific: effect reserve fence');

describe('mysql specific: effect reserve fence', { skip: url === null }, () => {
  const { dbUrl, db, make, pools } = throwawayDatabase(url);

  it('READ COMMITTED: a reserve of a new key whose lease is being rescued waits for the rescue and answers lost', async () => {
    // one connection, READ COMMITTED for the whole session (a server configured that way)
    const pool = mysql.createPool({ uri: dbUrl(db), connectionLimit: 1, supportBigNumbers: true, bigNumberStrings: true, timezone: 'Z' });
    pools.push(pool);
    pool.pool.on('connection', (c) => void c.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'));
    const [[session]] = (await pool.query('SELECT CONNECTION_ID() AS id, @@session.tx_isolation AS iso')) as unknown as [{ id: number; iso: string }[]];
    assert.equal(session?.iso, 'READ-COMMITTED');
    const s = make({ pool, tablePrefix: 'rc_' });
    await s.migrate();
    await s.jobs.insert({ jobs: [job('fx')] });
    const [c] = await s.leases.claim({ workerId: 'zombie', types: ['fx'], queues: null, limit: 1, leaseMs: 60_000 });
    assert.ok(c);

    const rescuer = await mysql.createConnection(dbUrl(db));
    const prober = await mysql.createConnection(dbUrl(db));
    try {
      // a sweeper's rescue of this lease, not committed yet: it holds the job row
      await rescuer.query('START TRANSACTION');
      await rescuer.query(`UPDATE rc_jobs SET status = 'failed', lease_token = NULL, locked_by = NULL WHERE id = ?`, [c.id]);
      const asked = s.effects.reserve({ key: 'zombie:send', jobId: c.id, leaseToken: c.leaseToken });
      // the reserve's statement is in flight on its connection (held up by the rescue's row lock), or it was answered
      let answered = false;
      void asked.finally(() => (answered = true));
      const inFlight = async (): Promise<'in flight' | 'not in flight'> => {
        while (!answered) {
          const [rows] = await prober.query(`SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE id = ? AND command = 'Query' AND info LIKE '%-- leasehold%'`, [session.id]);
          if (Number((rows as { n: unknown }[])[0]?.n) > 0) return 'in flight';
          await new Promise((r) => setTimeout(r, 10));
        }
        return 'not in flight';
      };
      const first = await Promise.race([asked.then((r) => `answered ${JSON.stringify(r)}`), inFlight()]);
      await rescuer.query('COMMIT');
      assert.equal(first, 'in flight', 'the reserve waited for the rescue');
      assert.deepEqual(await asked, { state: 'lost' });
      assert.equal(await s.effects.count(), 0, 'nothing reserved for the zombie');
    } finally {
      await rescuer.end();
      await prober.end();
    }
  });
});
