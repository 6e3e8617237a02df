/**
 * The pool the PostgreSQL adapter creates does not wait forever for a connection: a pool
 * starved by a long transaction makes calls fail after `connectTimeoutMs` with a
 * TransientStorageError (which the worker logs and backs off from), and they succeed again
 * once a connection is free. The default is 30 s; a bad value is refused.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { TransientStorageError, ValidationError } from '../../src/core/errors.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, postgresStorage, type PostgresStorage } from '../../src/storage/postgres/index.js';
import { serverFor } from '../support/databases.js';

const url = await serverFor('postgres', 'postgres pool');

describe('postgres pool: waiting for a connection', { skip: url === null }, () => {
  const schema = `lh_t_${randomBytes(6).toString('hex')}`;
  const made: PostgresStorage[] = [];
  after(async () => {
    for (const s of made) await s.close();
    const c = new pg.Client({ connectionString: url as string });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  });

  it('a starved pool fails the call after connectTimeoutMs (transient), and serves it once a connection is free', { timeout: 15_000 }, async () => {
    const s = postgresStorage({ connectionString: url as string, schema, poolSize: 1, connectTimeoutMs: 300 });
    made.push(s);
    await s.migrate();
    // the pool's only connection, held as a caller's long transaction would hold it
    const held = await s.pool.connect();
    await held.query('BEGIN');
    const t0 = Date.now();
    await assert.rejects(s.queues.counts(), (e: unknown) => {
      assert.ok(e instanceof TransientStorageError, `a transient error, got ${String(e)}`);
      assert.match((e as Error).message, /timeout/i);
      return true;
    });
    const waited = Date.now() - t0;
    assert.ok(waited >= 250 && waited < 3_000, `failed after ${waited} ms, the timeout is 300`);
    await held.query('COMMIT');
    held.release();
    assert.deepEqual(await s.queues.counts(), []);
  });

  it('the default is 30 s; a negative or fractional timeout is refused', () => {
    assert.equal(DEFAULT_CONNECT_TIMEOUT_MS, 30_000);
    const s = postgresStorage({ connectionString: url as string, schema });
    made.push(s);
    assert.equal((s.pool.options as { connectionTimeoutMillis?: number }).connectionTimeoutMillis, 30_000);
    for (const bad of [-1, 1.5]) {
      assert.throws(() => postgresStorage({ connectionString: url as string, schema, connectTimeoutMs: bad }), ValidationError);
    }
  });
});
