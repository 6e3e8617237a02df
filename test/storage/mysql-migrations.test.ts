/**
 * MySQL/MariaDB migrations: the baseline builds the data model of schema-expected.ts on a fresh
 * database, a second migrate() applies nothing, two processes migrating one fresh database at
 * once apply the baseline once between them, and a schema newer than the code is refused.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { SchemaTooNewError } from '../../src/core/errors.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/storage/mysql/index.js';
import { serverFor } from '../support/databases.js';
import { throwawayDatabase } from './mysql-support.js';
import { EXPECTED_TABLES, SCHEMA_VERSION as EXPECTED_VERSION, schemaDiff } from './schema-expected.js';

const url = await serverFor('mysql', 'mysql migrations');

/**
 * Where MySQL's tables differ from the model by design: `key` is a reserved word in MySQL, so
 * the ledger's key column is `effect_key`; the ledger has an auto-increment `id` (rows
 * clustered in insertion order, listed newest first by it); and jobs carry `unique_live`, the
 * STORED column whose UNIQUE index stands in for a partial one.
 */
const RENAMED: Record<string, Record<string, string>> = { effects: { effect_key: 'key' } };
const MYSQL_ONLY: Record<string, string[]> = { effects: ['id'], jobs: ['unique_live'] };

/** The tables of `db` under `prefix`, columns in table order, prefix stripped. */
async function catalogue(admin: mysql.Connection, db: string, prefix: string): Promise<Record<string, string[]>> {
  const [rows] = await admin.query(
    `SELECT TABLE_NAME AS t, COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION`,
    [db],
  );
  const out: Record<string, string[]> = {};
  for (const { t, c } of rows as { t: string; c: string }[]) {
    assert.ok(t.startsWith(prefix), `table ${t} has the prefix ${prefix}`);
    (out[t.slice(prefix.length)] ??= []).push(c);
  }
  return out;
}

describe('mysql migrations: the baseline on a fresh database', { skip: url === null }, () => {
  const server = throwawayDatabase(url);
  let admin: mysql.Connection;
  before(() => {
    admin = server.adminConnection();
  });

  it('builds the expected data model; schemaVersion() is SCHEMA_VERSION and a second migrate() applies nothing', async () => {
    const s = server.make();
    assert.equal(await s.schemaVersion(), 0, 'nothing applied yet');
    assert.deepEqual(await s.migrate(), { from: 0, to: 1, applied: [{ version: 1, name: 'baseline' }] });
    assert.deepEqual([SCHEMA_VERSION, MIGRATIONS.map((m) => m.version)], [EXPECTED_VERSION, [1]], 'one migration: the baseline');
    const actual = await catalogue(admin, server.db, 'leasehold_');
    for (const [table, only] of Object.entries(MYSQL_ONLY)) {
      for (const col of only) assert.ok(actual[table]?.includes(col), `${table}.${col}`);
      actual[table] = actual[table]!.filter((c) => !only.includes(c));
    }
    for (const [table, names] of Object.entries(RENAMED)) actual[table] = actual[table]!.map((c) => names[c] ?? c);
    assert.deepEqual(schemaDiff(actual), []);
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(EXPECTED_TABLES).sort());
    assert.equal(await s.schemaVersion(), SCHEMA_VERSION);
    assert.deepEqual(await s.migrate(), { from: SCHEMA_VERSION, to: SCHEMA_VERSION, applied: [] });
    assert.equal(await s.schemaVersion(), SCHEMA_VERSION);
  });

  it('refuses a schema newer than it knows with SchemaTooNewError', async () => {
    const s = server.make({ tablePrefix: 'new_' });
    await s.migrate();
    await admin.query(`INSERT INTO \`${server.db}\`.new_migrations (version, name, applied_at) VALUES (999, 'future', UTC_TIMESTAMP(6))`);
    await assert.rejects(s.migrate(), (e: unknown) => e instanceof SchemaTooNewError && e.code === 'SCHEMA_TOO_NEW');
  });
});

describe('mysql migrations: two processes on one fresh database', { skip: url === null }, () => {
  const server = throwawayDatabase(url);

  it('migrate at the same time: exactly one applies the baseline, both end at version 1, the ledger has it once', async () => {
    const [a, b] = [server.make(), server.make()];
    const [ra, rb] = await Promise.all([a.migrate(), b.migrate()]);
    assert.deepEqual([ra.to, rb.to], [SCHEMA_VERSION, SCHEMA_VERSION]);
    assert.deepEqual([...ra.applied, ...rb.applied], [{ version: 1, name: 'baseline' }], 'applied by exactly one of them');
    assert.deepEqual([await a.schemaVersion(), await b.schemaVersion()], [SCHEMA_VERSION, SCHEMA_VERSION]);
    const [rows] = await server.adminConnection().query(`SELECT version, name FROM \`${server.db}\`.leasehold_migrations`);
    assert.deepEqual((rows as { version: number; name: string }[]).map((r) => [Number(r.version), r.name]), [[1, 'baseline']]);
  });
});
