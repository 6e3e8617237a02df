/**
 * What only the PostgreSQL adapter has to prove about its schema and its connections:
 * concurrent migrators, the schema-too-new guard, schema-name validation, and dropped
 * connections classified as transient and replaced.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { SchemaTooNewError, TransientStorageError, ValidationError } from '../../src/core/errors.js';
import { MIGRATIONS, SCHEMA_VERSION, postgresStorage, quoteSchema } from '../../src/storage/postgres/index.js';
import { serverFor } from '../support/databases.js';
import { job, postgresFixtures, sleep } from './postgres-support.js';

const url = await serverFor('postgres', 'postgres specific: schema and connections');

describe('postgres specific: schema and connections', { skip: url === null }, () => {
  const { made, schemas, fresh, client } = postgresFixtures(url);

  it('two concurrent migrate() calls on a fresh schema both succeed, each version applied once', async () => {
    const a = fresh();
    const b = fresh(a.schema);
    const [ra, rb] = await Promise.all([a.migrate(), b.migrate()]);
    const applied = [...ra.applied, ...rb.applied].map((m) => m.version).sort((x, y) => x - y);
    assert.deepEqual(applied, MIGRATIONS.map((m) => m.version));
    assert.equal(ra.to, SCHEMA_VERSION);
    assert.equal(rb.to, SCHEMA_VERSION);
    const c = await client();
    const { rows } = await c.query(`SELECT version, count(*)::int AS n FROM "${a.schema}".migrations GROUP BY version ORDER BY version`);
    assert.deepEqual(rows.map((r) => [r.version, r.n]), applied.map((v) => [v, 1]));
    assert.equal(await a.schemaVersion(), SCHEMA_VERSION);
    assert.deepEqual((await a.migrate()).applied, []);
  });

  it('schemaVersion() is 0 before migrating', async () => {
    assert.equal(await fresh().schemaVersion(), 0);
  });

  it('a ledger newer than the code → SchemaTooNewError, nothing changed', async () => {
    const s = fresh();
    await s.migrate();
    const c = await client();
    await c.query(`INSERT INTO "${s.schema}".migrations (version, name) VALUES ($1, 'from the future')`, [SCHEMA_VERSION + 1]);
    await assert.rejects(fresh(s.schema).migrate(), SchemaTooNewError);
    assert.equal(await s.schemaVersion(), SCHEMA_VERSION + 1);
  });

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
    await killer.query('SELECT pg_terminate_backend($1)', [pid]);
    await sleep(100);
    assert.ok((await s.now()) instanceof Date, 'the pool reconnects after its idle connection was killed');
    const [r] = await s.jobs.insert({ jobs: [job('k')] });
    assert.ok(r?.created);
  });
});
