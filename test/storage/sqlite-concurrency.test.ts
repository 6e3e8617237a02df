/**
 * What only the SQLite adapter has to prove about sharing one file: several PROCESSES
 * claiming at once, a write waiting for another connection's write lock, and busy past the
 * timeout → TransientStorageError. (Migrating at once: sqlite-migrations.test.ts.)
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import Database from 'better-sqlite3';
import { TransientStorageError } from '../../src/core/errors.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { child, job, tempFiles, together } from './sqlite-support.js';

const require = createRequire(import.meta.url);

const tempFile = tempFiles();

describe('sqlite specific: several processes and connections on one file', () => {
  it('three processes claiming 600 jobs from one file at once: every job exactly once', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file });
    await s.migrate();
    const type = 'race';
    const inserted: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await s.jobs.insert({ jobs: Array.from({ length: 100 }, (_, k) => job(type, { payload: { i, k }, priority: k % 3 })) });
      inserted.push(...res.map((r) => r.job.id));
    }
    const results = await together<{ workerId: string; ids: string[] }>(['a', 'b', 'c'].map((w) => child(['claim', file, w, type, '7'])));
    const all = results.flatMap((r) => r.ids);
    assert.equal(new Set(all).size, all.length, 'no job claimed twice');
    assert.deepEqual([...all].sort(), [...inserted].sort(), 'every job claimed');
    // each claim opened exactly one attempt (read from the job row), under the worker that got the job
    const owner = new Map(results.flatMap((r) => r.ids.map((id) => [id, r.workerId] as const)));
    for (const id of inserted.slice(0, 20)) {
      const attempts = await s.attempts.list({ jobId: id });
      assert.equal(attempts.length, 1);
      assert.equal(attempts[0]?.workerId, owner.get(id));
    }
    await s.close();
  });

  it('a write waits while another connection holds the write lock, and lands after that transaction commits', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file, busyTimeoutMs: 60_000 });
    await s.migrate();
    // another thread takes the write lock, writes job 100 and commits 150 ms later (this thread's waits are synchronous)
    const holder = new Worker(
      `const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
       const { parentPort, workerData } = require('node:worker_threads');
       const db = new Database(workerData);
       db.exec('BEGIN IMMEDIATE');
       db.exec("INSERT INTO leasehold_jobs (id, queue, type, payload, status, run_at, max_attempts, timeout_ms, max_runtime_ms, created_at, updated_at) VALUES (100, 'default', 'held', '{}', 'queued', 0, 1, 1, 1, 0, 0)");
       parentPort.postMessage('locked');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 150);
       db.exec('COMMIT');
       db.close();`,
      { eval: true, workerData: file },
    );
    await once(holder, 'message');
    const [r] = await s.jobs.insert({ jobs: [job('waits')] });
    assert.equal(r?.job.id, '101', 'written after the other transaction committed job 100');
    await once(holder, 'exit');
    await s.close();
  });

  it('SQLITE_BUSY past the busy timeout surfaces as TransientStorageError with the cause', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file, busyTimeoutMs: 50 });
    await s.migrate();
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    try {
      await assert.rejects(s.jobs.insert({ jobs: [job('busy')] }), (e: unknown) => {
        assert.ok(e instanceof TransientStorageError);
        assert.match(String((e.cause as { code?: string }).code), /^SQLITE_BUSY/);
        return true;
      });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    assert.equal((await s.jobs.insert({ jobs: [job('busy')] })).length, 1, 'works once the lock is free');
    await s.close();
  });
});
