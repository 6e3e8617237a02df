/**
 * What only the SQLite adapter has to prove about one installation in one file: WAL mode,
 * table prefixes, what a caller's transaction handle may be, and the injected clock as the database clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { NotSupportedError, ValidationError } from '../../src/core/errors.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { job, tempFiles } from './sqlite-support.js';

const tempFile = tempFiles();

describe('sqlite specific: the file, prefixes and clock', () => {
  it('puts the file in WAL mode', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file, busyTimeoutMs: 1234 });
    await s.migrate();
    const raw = new Database(file, { readonly: true });
    try {
      assert.equal(raw.pragma('journal_mode', { simple: true }), 'wal');
    } finally {
      raw.close();
    }
    assert.deepEqual(s.capabilities, { multiProcess: true, transactionalEnqueue: true, listenNotify: true });
    await s.close();
  });

  it("refuses a `tx` that is no database handle (ValidationError), and a finish in the caller's transaction (NotSupportedError)", async () => {
    const s = sqliteStorage({ path: tempFile() });
    await s.migrate();
    await assert.rejects(s.jobs.insert({ jobs: [job('tx')], tx: {} }), ValidationError);
    await assert.rejects(s.leases.finish({ items: [{ id: '1', leaseToken: 't', status: 'succeeded', attempt: { outcome: 'succeeded' } }], tx: {} }), NotSupportedError);
    assert.equal((await s.queues.counts()).length, 0, 'nothing written');
    await s.close();
  });

  it('table prefixes keep two installations apart in one file; a bad prefix is refused', async () => {
    const file = tempFile();
    const a = sqliteStorage({ path: file, tablePrefix: 'app_a_' });
    const b = sqliteStorage({ path: file, tablePrefix: 'app_b_' });
    await a.migrate();
    await b.migrate();
    await a.jobs.insert({ jobs: [job('x')] });
    assert.equal((await a.jobs.list({ limit: 10 })).length, 1);
    assert.equal((await b.jobs.list({ limit: 10 })).length, 0);
    await a.close();
    await b.close();
    assert.throws(() => sqliteStorage({ path: file, tablePrefix: 'x; DROP TABLE' }), TypeError);
  });

  it('uses the injected clock as the database clock', async () => {
    let t = Date.UTC(2030, 0, 1);
    const s = sqliteStorage({ path: tempFile(), clock: () => t });
    await s.migrate();
    assert.equal((await s.now()).getTime(), t);
    const [r] = await s.jobs.insert({ jobs: [job('clock', { runAfterMs: 1000 })] });
    assert.equal(r?.job.runAt.getTime(), t + 1000);
    assert.equal((await s.leases.claim({ workerId: 'w', types: ['clock'], queues: null, limit: 1, leaseMs: 100 })).length, 0, 'not due yet');
    t += 1000;
    const [c] = await s.leases.claim({ workerId: 'w', types: ['clock'], queues: null, limit: 1, leaseMs: 100 });
    assert.equal(c?.lockedUntil.getTime(), t + 100);
    await s.close();
  });
});
