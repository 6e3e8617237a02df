/**
 * PostgreSQL migrations: the baseline builds the data model of schema-expected.ts in a fresh
 * schema, a second migrate() applies nothing, two storages migrating one fresh schema at once
 * apply the baseline once between them, and a ledger newer than the code is refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type pg from 'pg';
import { SchemaTooNewError } from '../../src/core/errors.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/storage/postgres/index.js';
import { serverFor } from '../support/databases.js';
import { postgresFixtures } from './postgres-support.js';
import { EXPECTED_TABLES, SCHEMA_VERSION as EXPECTED_VERSION, schemaDiff } from './schema-expected.js';

const url = await serverFor('postgres', 'postgres migrations');

const BASELINE = { version: 1, name: 'baseline' };

/** The tables of `schema` and their columns, in table order. */
async function catalogue(c: pg.Client, schema: string): Promise<Record<string, string[]>> {
  const { rows } = await c.query(
    `SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
    [schema],
  );
  const out: Record<string, string[]> = {};
  for (const { t, c: col } of rows as { t: string; c: string }[]) (out[t] ??= []).push(col);
  return out;
}

describe('postgres migrations', { skip: url === null }, () => {
  const { fresh, client } = postgresFixtures(url);

  it('the baseline builds the expected data model; schemaVersion() is SCHEMA_VERSION and a second migrate() applies nothing', async () => {
    const s = fresh();
    assert.equal(await s.schemaVersion(), 0, 'nothing applied yet, not even the ledger');
    assert.deepEqual(await s.migrate(), { from: 0, to: 1, applied: [BASELINE] });
    assert.deepEqual([SCHEMA_VERSION, MIGRATIONS.map((m) => [m.version, m.name])], [EXPECTED_VERSION, [[1, 'baseline']]], 'one migration: the baseline');
    const c = await client();
    const actual = await catalogue(c, s.schema);
    assert.deepEqual(schemaDiff(actual), []);
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(EXPECTED_TABLES).sort());
    const functions = await c.query(`SELECT proname FROM pg_proc WHERE pronamespace = $1::regnamespace ORDER BY proname`, [s.schema]);
    const settings = await c.query(`SELECT proconfig FROM pg_proc WHERE pronamespace = $1::regnamespace AND proname = 'claim_jobs'`, [s.schema]);
    assert.ok((settings.rows[0].proconfig as string[]).includes('jit=off'), 'the claim is never JIT-compiled, however large the table');
    assert.deepEqual(functions.rows.map((r) => r.proname), ['claim_jobs', 'settle_children'], 'the claim and the settle of a finish\'s children are the statements run as functions');
    assert.equal(await s.schemaVersion(), SCHEMA_VERSION);
    assert.deepEqual(await s.migrate(), { from: SCHEMA_VERSION, to: SCHEMA_VERSION, applied: [] });
    assert.equal(await s.schemaVersion(), SCHEMA_VERSION);
  });

  it('two storages migrating one fresh schema at the same time: exactly one applies the baseline, both end at version 1', async () => {
    const a = fresh();
    const b = fresh(a.schema);
    const [ra, rb] = await Promise.all([a.migrate(), b.migrate()]);
    assert.deepEqual([ra.to, rb.to], [SCHEMA_VERSION, SCHEMA_VERSION]);
    assert.deepEqual([...ra.applied, ...rb.applied], [BASELINE], 'applied by exactly one of them');
    assert.deepEqual([await a.schemaVersion(), await b.schemaVersion()], [SCHEMA_VERSION, SCHEMA_VERSION]);
    const c = await client();
    const { rows } = await c.query(`SELECT version, name FROM "${a.schema}".migrations`);
    assert.deepEqual(rows.map((r) => [r.version, r.name]), [[1, 'baseline']]);
  });

  it('a ledger newer than the code → SchemaTooNewError, nothing changed', async () => {
    const s = fresh();
    await s.migrate();
    const c = await client();
    await c.query(`INSERT INTO "${s.schema}".migrations (version, name) VALUES ($1, 'from the future')`, [SCHEMA_VERSION + 1]);
    await assert.rejects(fresh(s.schema).migrate(), SchemaTooNewError);
    assert.equal(await s.schemaVersion(), SCHEMA_VERSION + 1);
  });
});
