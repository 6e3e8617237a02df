/**
 * MySQL/MariaDB's idle claim (leases.ts): after a claim that came back short, the next one of the
 * same types and queues is one plain read of the claim index, no transaction, while nothing is
 * due; it still brings a job made due meanwhile, skips a row another transaction holds, and
 * leaves a paused queue's jobs, as the locking claim does.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClaimParams } from '../../src/core/storage.js';
import type { MysqlStorage } from '../../src/storage/mysql/index.js';
import { serverFor } from '../support/databases.js';
import { job, throwawayDatabase } from './mysql-support.js';

const url = await serverFor('mysql', 'mysql claim probe');

/** The header of every statement `storage` sends from now on (reaching into its pool: a test of the adapter's own traffic). */
function headers(storage: MysqlStorage): string[] {
  const sent: string[] = [];
  const pool = (storage as unknown as { db: { pool: { query: (...a: unknown[]) => unknown; getConnection: () => Promise<{ query: (...a: unknown[]) => unknown }> } } }).db.pool;
  const log = (o: unknown) => sent.push(...(String((o as { sql?: string }).sql ?? o).match(/-- leasehold [A-Za-z]+/g) ?? ['?']));
  const q = pool.query.bind(pool);
  pool.query = (o: unknown, ...rest: unknown[]) => (log(o), q(o, ...rest));
  const get = pool.getConnection.bind(pool);
  pool.getConnection = async () => {
    const c = await get();
    const cq = c.query.bind(c);
    c.query = (o: unknown, ...rest: unknown[]) => (log(o), cq(o, ...rest));
    return c;
  };
  return sent;
}

describe('mysql: an idle claim is one plain read', { skip: url === null }, () => {
  const { make } = throwawayDatabase(url);

  it('while nothing is due: one statement, no transaction; a job made due, a held row and a paused queue as the locking claim has them', async () => {
    const s = make();
    const other = make();
    await s.migrate();
    const sent = headers(s);
    const claim = (types: string[], queues: string[] | null = null, limit = 5): ClaimParams => ({ workerId: 'w', types, queues, limit, leaseMs: 30_000 });

    assert.deepEqual(await s.leases.claim(claim(['a'])), [], 'the first claim: the locking transaction');
    sent.length = 0;
    assert.deepEqual(await s.leases.claim(claim(['a'])), []);
    assert.deepEqual(sent, ['-- leasehold claimProbe'], 'after a short claim, only the probe');

    await other.jobs.insert({ jobs: [job('a'), job('a', { queue: 'held' })] });
    const got = await s.leases.claim(claim(['a'], ['default']));
    assert.equal(got.length, 1, 'a job made due meanwhile is claimed');

    // the row another transaction holds: the probe sees it, the claim skips it
    const pool = (other as unknown as { db: { pool: { getConnection: () => Promise<{ query: (q: string, v?: unknown[]) => Promise<unknown>; release: () => void }> } } }).db.pool;
    const holder = await pool.getConnection();
    try {
      await holder.query('START TRANSACTION');
      await holder.query(`SELECT id FROM leasehold_jobs WHERE queue = 'held' FOR UPDATE`);
      assert.deepEqual(await s.leases.claim(claim(['a'], ['held'])), [], 'first claim of this filter');
      sent.length = 0;
      assert.deepEqual(await s.leases.claim(claim(['a'], ['held'])), []);
      assert.ok(sent.includes('-- leasehold claimProbe') && sent.includes('-- leasehold claimJobs'), 'the probe found it, the locking claim skipped it');
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    assert.equal((await s.leases.claim(claim(['a'], ['held']))).length, 1, 'released: claimed');

    await s.queues.pause({ queue: 'paused' });
    await other.jobs.insert({ jobs: [job('a', { queue: 'paused' })] });
    assert.deepEqual(await s.leases.claim(claim(['a'])), []);
    sent.length = 0;
    assert.deepEqual(await s.leases.claim(claim(['a'])), [], 'a paused queue\'s job is not claimed');
    assert.deepEqual(sent, ['-- leasehold claimProbe'], 'and the probe does not count it as due');
    await s.queues.resume({ queue: 'paused' });
    assert.equal((await s.leases.claim(claim(['a']))).length, 1);

    // a full claim: the next goes straight to the transaction (more may be due)
    await other.jobs.insert({ jobs: [job('b'), job('b'), job('b')] });
    assert.equal((await s.leases.claim(claim(['b'], null, 2))).length, 2);
    sent.length = 0;
    assert.equal((await s.leases.claim(claim(['b'], null, 2))).length, 1);
    assert.ok(!sent.includes('-- leasehold claimProbe'), 'no probe after a full claim');
  });
});
