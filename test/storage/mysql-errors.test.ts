/**
 * MySQL/MariaDB error handling beyond the conformance suite: error classification and
 * retry, and a real deadlock classified as a lock error.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { TransientStorageError } from '../../src/core/errors.js';
import { classifyMysqlError } from '../../src/storage/mysql/index.js';
import { withRetry } from '../../src/storage/mysql/db.js';
import { serverFor } from '../support/databases.js';
import { throwawayDatabase } from './mysql-support.js';

describe('mysql: error classification and retry', () => {
  const err = (errno: number, code: string) => Object.assign(new Error(code), { errno, code });
  it('classifies deadlock and lock wait timeout as lock errors, dropped connections as connection', () => {
    assert.equal(classifyMysqlError(err(1213, 'ER_LOCK_DEADLOCK')), 'lock');
    assert.equal(classifyMysqlError(err(1205, 'ER_LOCK_WAIT_TIMEOUT')), 'lock');
    assert.equal(classifyMysqlError(err(1467, 'ER_AUTOINC_READ_FAILED')), 'lock', 'a deadlock on the auto-increment lock');
    assert.equal(classifyMysqlError(Object.assign(new Error('x'), { code: 'PROTOCOL_CONNECTION_LOST', fatal: true })), 'connection');
    assert.equal(classifyMysqlError(Object.assign(new Error('x'), { code: 'ECONNRESET' })), 'connection');
    assert.equal(classifyMysqlError(err(1927, 'ER_CONNECTION_KILLED')), 'connection');
    assert.equal(classifyMysqlError(err(1062, 'ER_DUP_ENTRY')), 'other');
    assert.equal(classifyMysqlError(err(1064, 'ER_PARSE_ERROR')), 'other');
    assert.equal(classifyMysqlError('nope'), 'other');
  });
  it('retries lock errors with jitter, then gives up with TransientStorageError', async () => {
    const sleeps: number[] = [];
    let calls = 0;
    const ok = await withRetry('t', async () => (++calls < 3 ? Promise.reject(err(1213, 'ER_LOCK_DEADLOCK')) : 'done'), false, { sleep: async (ms) => void sleeps.push(ms), random: () => 0.5 });
    assert.equal(ok, 'done');
    assert.equal(calls, 3);
    assert.deepEqual(sleeps, [10, 20]);
    calls = 0;
    await assert.rejects(
      withRetry('t', async () => ++calls && Promise.reject(err(1205, 'ER_LOCK_WAIT_TIMEOUT')), false, { attempts: 4, sleep: async () => undefined }),
      (e: unknown) => e instanceof TransientStorageError && e.code === 'TRANSIENT_STORAGE',
    );
    assert.equal(calls, 4);
  });
  it('does not retry a dropped connection where the work may have committed; other errors pass through', async () => {
    let calls = 0;
    const lost = Object.assign(new Error('lost'), { code: 'PROTOCOL_CONNECTION_LOST', fatal: true });
    await assert.rejects(withRetry('t', async () => ++calls && Promise.reject(lost), false), TransientStorageError);
    assert.equal(calls, 1);
    const dup = err(1062, 'ER_DUP_ENTRY');
    await assert.rejects(withRetry('t', async () => Promise.reject(dup), true), (e) => e === dup);
  });
});

const url = await serverFor('mysql', 'mysql specific: a real deadlock');

describe('mysql specific: a real deadlock', { skip: url === null }, () => {
  const server = throwawayDatabase(url);
  const { db, dbUrl } = server;
  let admin: mysql.Connection;
  before(() => {
    admin = server.adminConnection();
  });

  it('a real deadlock surfaces as errno 1213 and classifies as a lock error', async () => {
    await admin.query(`CREATE TABLE \`${db}\`.dl (id INT PRIMARY KEY, v INT) ENGINE=InnoDB`);
    await admin.query(`INSERT INTO \`${db}\`.dl VALUES (1, 0), (2, 0)`);
    const a = await mysql.createConnection(dbUrl(db));
    const b = await mysql.createConnection(dbUrl(db));
    try {
      await a.beginTransaction();
      await b.beginTransaction();
      await a.query('UPDATE dl SET v = 1 WHERE id = 1');
      await b.query('UPDATE dl SET v = 1 WHERE id = 2');
      const results = await Promise.allSettled([a.query('UPDATE dl SET v = 2 WHERE id = 2'), b.query('UPDATE dl SET v = 2 WHERE id = 1')]);
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      assert.equal(failed.length, 1);
      assert.equal((failed[0]!.reason as { errno: number }).errno, 1213);
      assert.equal(classifyMysqlError(failed[0]!.reason), 'lock');
    } finally {
      await a.rollback().catch(() => undefined);
      await b.rollback().catch(() => undefined);
      await a.end();
      await b.end();
    }
  });
});
