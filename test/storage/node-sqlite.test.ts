/**
 * The SQLite adapter on Node's built-in `node:sqlite` driver against the shared conformance
 * suite: the same files and SQL as better-sqlite3, only the driver differs.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ValidationError } from '../../src/core/errors.js';
import { openStorage, parseDbUrl } from '../../src/storage/open.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { runStorageConformance } from '../conformance/index.js';
import { sqliteConformance } from './sqlite-support.js';

runStorageConformance(sqliteConformance('sqlite (node:sqlite)', 'node:sqlite'));

describe('sqlite: URLs pick the driver', () => {
  it('?driver= names it; the path keeps any other question mark', () => {
    assert.deepEqual(parseDbUrl('sqlite:/tmp/x.db?driver=node:sqlite'), { kind: 'sqlite', target: '/tmp/x.db', driver: 'node:sqlite' });
    assert.deepEqual(parseDbUrl('sqlite:x.db?driver=better-sqlite3'), { kind: 'sqlite', target: 'x.db', driver: 'better-sqlite3' });
    assert.deepEqual(parseDbUrl('sqlite:odd?name.db'), { kind: 'sqlite', target: 'odd?name.db' });
  });

  it('an unknown driver or option is INVALID_URL before any file is opened', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-node-sqlite-url-'));
    try {
      for (const q of ['driver=sqlite3', 'driver=', 'driver=node:sqlite&mode=ro']) {
        const url = `sqlite:${path.join(dir, 'x.db')}?${q}`;
        await assert.rejects(() => openStorage(url), (e: unknown) => e instanceof ValidationError && e.code === 'INVALID_URL', url);
      }
      assert.throws(() => sqliteStorage({ path: path.join(dir, 'y.db'), driver: 'sqlite3' as 'node:sqlite' }), ValidationError);
      assert.deepEqual(readdirSync(dir), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('openStorage on ?driver=node:sqlite migrates and runs a job, and better-sqlite3 reads what it wrote', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-node-sqlite-url-'));
    const file = path.join(dir, 'x.db');
    try {
      const a = await openStorage(`sqlite:${file}?driver=node:sqlite`);
      await a.migrate();
      const [ins] = await a.jobs.insert({ jobs: [{ queue: 'default', type: 't', payload: { n: 1 }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: 'k', timeoutMs: 1_000, maxRuntimeMs: 10_000 }] });
      await a.close();
      const b = await openStorage(`sqlite:${file}`);
      assert.deepEqual((await b.jobs.get({ id: ins?.job.id as string }))?.payload, { n: 1 });
      await b.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
