/**
 * The SQLite migrations: a fresh file gets exactly the data model of schema-expected.ts (plus
 * SQLite's job_id_floor), a second migrate applies nothing, migrators racing on one new file
 * (two storages in one process, two processes) apply the baseline once, and a ledger newer than
 * this code is refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SchemaTooNewError } from '../../src/core/errors.js';
import { SCHEMA_VERSION as SQLITE_SCHEMA_VERSION, SQLITE_DRIVERS, sqliteStorage } from '../../src/storage/sqlite/index.js';
import { SCHEMA_VERSION, schemaDiff } from './schema-expected.js';
import { child, tempFiles, together } from './sqlite-support.js';

const tempFile = tempFiles();
const BASELINE = { from: 0, to: SCHEMA_VERSION, applied: [{ version: 1, name: 'baseline' }] };

/** The tables under `prefix` (prefix stripped) and their columns, as the file's catalogue has them. */
function catalogue(file: string, prefix: string): Record<string, string[]> {
  const raw = new Database(file, { readonly: true });
  try {
    const tables = raw.prepare(`SELECT substr(name, length(?) + 1) AS t FROM sqlite_master
      WHERE type = 'table' AND substr(name, 1, length(?)) = ? ORDER BY name`).all(prefix, prefix, prefix) as { t: string }[];
    return Object.fromEntries(tables.map(({ t }) => [t, (raw.prepare('SELECT name FROM pragma_table_info(?)').all(prefix + t) as { name: string }[]).map((c) => c.name)]));
  } finally {
    raw.close();
  }
}

describe('sqlite migrations', () => {
  for (const driver of SQLITE_DRIVERS) {
    it(`a fresh file (${driver}) gets the expected tables and columns, at the expected version; a second migrate applies nothing`, async () => {
      const file = tempFile();
      const s = sqliteStorage({ path: file, driver, tablePrefix: 'lh_' });
      assert.equal(await s.schemaVersion(), 0);
      assert.deepEqual(catalogue(file, 'lh_'), {}, 'schemaVersion() on an empty file creates nothing');
      assert.deepEqual(await s.migrate(), BASELINE);
      assert.deepEqual(schemaDiff(catalogue(file, 'lh_'), { job_id_floor: ['one', 'floor'] }), []);
      assert.equal(SQLITE_SCHEMA_VERSION, SCHEMA_VERSION);
      assert.equal(await s.schemaVersion(), SCHEMA_VERSION);
      assert.deepEqual(await s.migrate(), { from: SCHEMA_VERSION, to: SCHEMA_VERSION, applied: [] });
      await s.close();
    });
  }

  it('two storages on one fresh file migrating at once: one applies the baseline, both end at the version', async () => {
    const file = tempFile();
    const [a, b] = [sqliteStorage({ path: file }), sqliteStorage({ path: file })];
    const results = await Promise.all([a.migrate(), b.migrate()]);
    assert.deepEqual(results.map((r) => r.to), [SCHEMA_VERSION, SCHEMA_VERSION]);
    assert.deepEqual(results.flatMap((r) => r.applied), BASELINE.applied, 'the baseline applied exactly once');
    assert.deepEqual([await a.schemaVersion(), await b.schemaVersion()], [SCHEMA_VERSION, SCHEMA_VERSION]);
    await a.close();
    await b.close();
  });

  it('two processes creating and migrating the same new file at once both succeed; the baseline is recorded once', async () => {
    const file = tempFile();
    const results = await together<{ to: number; applied: { version: number; name: string }[] }>([child(['migrate', file]), child(['migrate', file])]);
    assert.deepEqual(results.map((r) => r.to), [SCHEMA_VERSION, SCHEMA_VERSION]);
    assert.deepEqual(results.flatMap((r) => r.applied), BASELINE.applied, 'applied by exactly one process');
    const raw = new Database(file, { readonly: true });
    try {
      assert.deepEqual(raw.prepare('SELECT version, name FROM leasehold_migrations').all(), BASELINE.applied);
    } finally {
      raw.close();
    }
  });

  it('a ledger newer than this code throws SchemaTooNewError and changes nothing', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file });
    await s.migrate();
    await s.close();
    const raw = new Database(file);
    raw.prepare('INSERT INTO leasehold_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(SCHEMA_VERSION + 1, 'from the future', Date.now());
    raw.close();
    const s2 = sqliteStorage({ path: file });
    await assert.rejects(s2.migrate(), (e: unknown) => e instanceof SchemaTooNewError && e.code === 'SCHEMA_TOO_NEW');
    assert.equal(await s2.schemaVersion(), SCHEMA_VERSION + 1);
    await s2.close();
  });
});
