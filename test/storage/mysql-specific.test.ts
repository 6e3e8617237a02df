/**
 * MySQL/MariaDB specifics beyond the conformance suite: server version check, a non-UTC session
 * time zone, enqueue (and finish) in the caller's transaction, and reconnecting after KILL
 * CONNECTION. Migrations: mysql-migrations.test.ts.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { LeaseholdError } from '../../src/core/errors.js';
import { checkServerVersion, parseServerVersion } from '../../src/storage/mysql/index.js';
import { serverFor } from '../support/databases.js';
import { job, throwawayDatabase } from './mysql-support.js';

describe('mysql: server version check', () => {
  it('parses MySQL, MariaDB and the old MariaDB 5.5.5- prefix', () => {
    assert.deepEqual(parseServerVersion('8.0.36-0ubuntu0.22.04.1'), { flavor: 'mysql', major: 8, minor: 0, patch: 36, supported: true, collation: 'utf8mb4_0900_bin' });
    assert.equal(parseServerVersion('10.11.6-MariaDB-1:10.11.6+maria~deb12').flavor, 'mariadb');
    assert.equal(parseServerVersion('10.11.6-MariaDB-1:10.11.6+maria~deb12').collation, 'utf8mb4_nopad_bin');
    const old = parseServerVersion('5.5.5-10.6.12-MariaDB-log');
    assert.deepEqual([old.flavor, old.major, old.minor, old.patch, old.supported], ['mariadb', 10, 6, 12, true]);
    assert.equal(parseServerVersion('8.0.5').collation, 'utf8mb4_bin');
    assert.equal(parseServerVersion('9.1.0').supported, true);
  });
  it('accepts MySQL 8.0.4+ and MariaDB 10.6+', () => {
    for (const v of ['8.0.4', '8.0.36', '8.4.0-commercial', '10.6.0-MariaDB', '10.11.19-MariaDB-0+deb12u1', '11.4.2-MariaDB']) {
      assert.doesNotThrow(() => checkServerVersion(v), v);
    }
  });
  it('refuses servers without SKIP LOCKED with UNSUPPORTED_SERVER', () => {
    for (const v of ['5.7.44-log', '8.0.0-dmr', '8.0.3-rc', '10.5.22-MariaDB', '10.4.3-MariaDB-log', '5.5.5-10.5.9-MariaDB']) {
      assert.throws(() => checkServerVersion(v), (e: unknown) => e instanceof LeaseholdError && e.code === 'UNSUPPORTED_SERVER' && /SKIP LOCKED/.test(e.message), v);
    }
    assert.throws(() => checkServerVersion('garbage'), (e: unknown) => e instanceof LeaseholdError && e.code === 'UNSUPPORTED_SERVER');
  });
});

const url = await serverFor('mysql', 'mysql specific: sessions and connections');

describe('mysql specific: sessions and connections', { skip: url === null }, () => {
  const server = throwawayDatabase(url);
  const { db, dbUrl, make, pools } = server;
  let admin: mysql.Connection;
  before(() => {
    admin = server.adminConnection();
  });

  it('keeps UTC times under a non-UTC session time zone (+05:00) and a pool without timezone options', async () => {
    const pool = mysql.createPool({ uri: dbUrl(db), connectionLimit: 2 });
    pools.push(pool);
    pool.on('connection', (conn) => void conn.query("SET time_zone = '+05:00'"));
    const [[tz]] = (await pool.query('SELECT @@session.time_zone AS tz, TIMESTAMPDIFF(HOUR, UTC_TIMESTAMP(), NOW()) AS h')) as unknown as [{ tz: string; h: number }[]];
    assert.deepEqual([tz?.tz, Number(tz?.h)], ['+05:00', 5], 'the session really runs at +05:00');
    const s = make({ pool, tablePrefix: 'tz_' });
    await s.migrate();
    const utcNow = async (): Promise<number> => {
      const [[r]] = (await admin.query({ sql: 'SELECT UTC_TIMESTAMP(6) AS t', dateStrings: true })) as unknown as [{ t: string }[]];
      return Date.parse(`${r!.t.replace(' ', 'T').slice(0, 23)}Z`);
    };
    const t0 = await utcNow();
    const dbNow = (await s.now()).getTime();
    const explicit = new Date(Date.UTC(2031, 0, 2, 3, 4, 5, 678));
    const [delayed, fixed, due] = await s.jobs.insert({ jobs: [job('tz-delayed', { runAfterMs: 60_000 }), job('tz-fixed', { runAt: explicit }), job('tz-due')] });
    const claimed = await s.leases.claim({ workerId: 'w', types: ['tz-due'], queues: null, limit: 1, leaseMs: 30_000 });
    const t1 = await utcNow();
    assert.ok(dbNow >= t0 - 1 && dbNow <= t1 + 1, 'now() is UTC');
    const rd = delayed!.job.runAt.getTime();
    assert.ok(rd >= t0 + 60_000 - 1 && rd <= t1 + 60_000 + 1, `run_at ${delayed!.job.runAt.toISOString()} is UTC now + 60 s`);
    assert.equal(fixed!.job.runAt.toISOString(), explicit.toISOString(), 'an explicit runAt round-trips exactly');
    assert.ok(due!.job.createdAt.getTime() >= t0 - 1 && due!.job.createdAt.getTime() <= t1 + 1, 'created_at is UTC');
    const c = claimed[0]!;
    const lu = c.lockedUntil.getTime();
    assert.ok(lu >= t0 + 30_000 - 1 && lu <= t1 + 30_000 + 1, `locked_until ${c.lockedUntil.toISOString()} is UTC now + 30 s`);
    const [[stored]] = (await admin.query({ sql: `SELECT run_at FROM \`${db}\`.tz_jobs WHERE id = ?`, values: [fixed!.job.id], dateStrings: true })) as unknown as [{ run_at: string }[]];
    assert.equal(stored!.run_at, '2031-01-02 03:04:05.678000', 'stored as UTC at microsecond precision');
  });

  it('enqueues in the caller\'s transaction: rollback leaves no job, commit keeps it', async () => {
    const s = make({ tablePrefix: 'tx_' });
    await s.migrate();
    const pool = mysql.createPool({ uri: dbUrl(db), connectionLimit: 2 });
    pools.push(pool);
    const conn = await pool.getConnection();
    try {
      await conn.beginTransaction();
      const [rolled] = await s.jobs.insert({ jobs: [job('tx-a')], tx: conn });
      await conn.rollback();
      assert.equal(await s.jobs.get({ id: rolled!.job.id }), null, 'rolled back: no job');
      assert.equal((await s.leases.claim({ workerId: 'w', types: ['tx-a'], queues: null, limit: 5, leaseMs: 1000 })).length, 0);

      await conn.beginTransaction();
      const [kept] = await s.jobs.insert({ jobs: [job('tx-b', { idempotencyKey: 'k1' })], tx: conn });
      assert.equal(await s.jobs.get({ id: kept!.job.id }), null, 'not visible before commit');
      await conn.commit();
      assert.equal((await s.jobs.get({ id: kept!.job.id }))?.status, 'queued', 'committed: job exists');

      const [claimed] = await s.leases.claim({ workerId: 'w', types: ['tx-b'], queues: null, limit: 1, leaseMs: 30_000 });
      await conn.beginTransaction();
      const [fin] = await s.leases.finish({ items: [{ id: claimed!.id, leaseToken: claimed!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }], tx: conn });
      assert.deepEqual(fin, { id: claimed!.id, applied: true });
      await conn.rollback();
      assert.equal((await s.jobs.get({ id: claimed!.id }))?.status, 'running', 'finish rolled back with the caller');
    } finally {
      conn.release();
    }
  });

  it('reconnects after its connections are killed (KILL CONNECTION)', async () => {
    const s = make({ tablePrefix: 'kill_', poolSize: 2 });
    await s.migrate();
    await s.jobs.insert({ jobs: [job('k')] });
    const [procs] = await admin.query('SELECT id FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()', [db]);
    assert.ok((procs as unknown[]).length > 0, 'the storage had connections open to kill');
    for (const p of procs as { id: number }[]) await admin.query(`KILL CONNECTION ${Number(p.id)}`).catch(() => undefined);
    const [inserted] = await s.jobs.insert({ jobs: [job('k')] });
    assert.equal((await s.jobs.get({ id: inserted!.job.id }))?.type, 'k');
    assert.equal((await s.leases.claim({ workerId: 'w', types: ['k'], queues: null, limit: 10, leaseMs: 30_000 })).length, 2);
  });
});
