/**
 * What only the PostgreSQL adapter has to prove about its schema name and its connections:
 * schema-name validation, and dropped connections classified as transient and replaced
 * (migrations: postgres-migrations.test.ts; waiting for a connection: postgres-pool.test.ts).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { TransientStorageError, ValidationError } from '../../src/core/errors.js';
import { postgresStorage, quoteSchema } from '../../src/storage/postgres/index.js';
import { serverFor } from '../support/databases.js';
import { job, postgresFixtures, sleep } from './postgres-support.js';

const url = await serverFor('postgres', 'postgres specific: schema name and connections');

describe('postgres specific: schema name and connections', { skip: url === null }, () => {
  const { made, schemas, client } = postgresFixtures(url);

  it('rejects schema names that are not plain identifiers', () => {
    for (const bad of ['Leasehold', 'a-b', '1abc', 'x"; DROP TABLE jobs; --', '', 'a'.repeat(64)]) {
      assert.throws(() => postgresStorage({ connectionString: url as string, schema: bad }), ValidationError, bad);
    }
    assert.equal(quoteSchema('lh_1'), '"lh_1"');
  });

  it('a dropped connection is reported as TransientStorageError, and the pool replaces it', async () => {
    const s = postgresStorage({ connectionString: url as string, schema: `lh_t_${randomBytes(6).toString('hex')}`, poolSize: 1 });
    made.push(s);
    schemas.push(s.schema);
    await s.migrate();
    const killer = await client();

    const victim = await client();
    const { rows } = await victim.query('SELECT pg_backend_pid() AS pid');
    await killer.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
    await sleep(50);
    await assert.rejects(s.jobs.insert({ jobs: [job('k')], tx: victim }), TransientStorageError);

    const pid = (await s.pool.query('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    // the pool drops its idle client when that client reports the termination, not at a set time;
    // no listener of the test's own: the storage's guard alone must keep the process alive
    await killer.query('SELECT pg_terminate_backend($1)', [pid]);
    for (let i = 0; i < 500 && s.pool.totalCount > 0; i++) await sleep(20);
    assert.equal(s.pool.totalCount, 0, 'the pool dropped its killed idle client');
    assert.ok((await s.now()) instanceof Date, 'the pool reconnects after its idle connection was killed');
    const [r] = await s.jobs.insert({ jobs: [job('k')] });
    assert.ok(r?.created);
  });

  it('a client out of the pool whose connection is killed does not crash the process, and is not pooled again', { timeout: 30_000 }, async () => {
    const s = postgresStorage({ connectionString: url as string, schema: `lh_t_${randomBytes(6).toString('hex')}`, poolSize: 1 });
    made.push(s);
    schemas.push(s.schema);
    await s.migrate();
    const killer = await client();
    // checked out, between two statements, as a transaction holds it: pg-pool has no listener on it then
    const held = await s.pool.connect();
    const pid = (await held.query('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    const ended = new Promise((r) => held.once('end', r));
    await killer.query('SELECT pg_terminate_backend($1)', [pid]);
    // no listener of the test's own: without the storage's, this 'error' crashes the test process
    await ended;
    held.release(true);
    const again = (await s.pool.query('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    assert.notEqual(again, pid, 'a fresh connection, not the killed one');
  });
});
