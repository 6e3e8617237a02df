/**
 * The caller's own SQLite handle as `tx` (better-sqlite3, and node:sqlite's DatabaseSync): the
 * enqueue's statements run on it inside the caller's open transaction on the storage's file, so
 * commit makes the job visible, rollback leaves nothing, and while the transaction is open no
 * other connection sees or claims it. Anything else is refused before a write.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { TransientStorageError } from '../../src/core/errors.js';
import { JobNotFoundError, ValidationError, createClient, defineJob } from '../../src/index.js';
import { type SqliteStorage, sqliteStorage } from '../../src/storage/sqlite/index.js';
import { tempFiles } from '../storage/sqlite-support.js';

const tempFile = tempFiles();
const plain = defineJob({ type: 'sq-plain', handler: () => undefined });
const typed = defineJob({ type: 'sq-typed', schema: z.object({ n: z.number() }), handler: () => undefined });

/** The caller's handle: what the test needs of better-sqlite3's Database and node:sqlite's DatabaseSync alike. */
interface Handle {
  exec(sql: string): unknown;
  prepare(sql: string): { run(...a: unknown[]): unknown; all(...a: unknown[]): unknown[] };
  close(): void;
}

const HANDLES: { name: string; open(file: string): Handle }[] = [
  { name: 'better-sqlite3', open: (file) => new Database(file) },
  { name: 'node:sqlite', open: (file) => new (process.getBuiltinModule('node:sqlite') as typeof import('node:sqlite')).DatabaseSync(file) as unknown as Handle },
];

for (const { name, open } of HANDLES) {
  describe(`sqlite: enqueue in your ${name} transaction`, () => {
    let file: string;
    let storage: SqliteStorage;
    let db: Handle;
    const client = () => createClient({ storage, jobs: [plain, typed] });
    const claim = (type: string) => storage.leases.claim({ workerId: 'other', types: [type], queues: null, limit: 10, leaseMs: 60_000 });
    const orders = () => (db.prepare('SELECT id FROM orders ORDER BY id').all() as { id: number }[]).map((r) => r.id);
    before(async () => {
      file = tempFile();
      // a short busy timeout: a claim meeting the caller's write lock gives up quickly
      storage = sqliteStorage({ path: file, busyTimeoutMs: 50 });
      await storage.migrate();
      db = open(file);
      db.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY)');
    });
    after(async () => {
      db?.close();
      await storage?.close();
    });

    it('commit: the jobs land with your row, and the storage claims them', async () => {
      db.exec('BEGIN IMMEDIATE');
      db.prepare('INSERT INTO orders (id) VALUES (?)').run(1);
      const answered = [await client().enqueue('sq-plain', { n: 1 }, { tx: db }), ...await client().enqueueMany([
        { type: 'sq-plain', payload: { n: 2 }, options: { tx: db } },
        { type: 'sq-typed', payload: { n: 3 }, options: { tx: db, idempotencyKey: 'commit' } },
      ])];
      db.exec('COMMIT');
      assert.deepEqual(orders(), [1]);
      const stored = await Promise.all(answered.map((j) => client().getJob(j.id)));
      assert.deepEqual(stored.map((j) => [j.id, j.type, j.status, j.payload, j.runAt.getTime()]), answered.map((j) => [j.id, j.type, 'queued', j.payload, j.runAt.getTime()]));
      const claimed = [...(await claim('sq-plain')), ...(await claim('sq-typed'))];
      assert.deepEqual(claimed.map((j) => j.id).sort(), answered.map((j) => j.id).sort());
    });

    it('rollback: no job, no attempt, no effect, and its idempotency key is free again', async () => {
      db.exec('BEGIN');
      db.prepare('INSERT INTO orders (id) VALUES (?)').run(2);
      const { id } = await client().enqueue('sq-typed', { n: 1 }, { tx: db, idempotencyKey: 'rollback' });
      db.exec('ROLLBACK');
      assert.deepEqual(orders(), [1]);
      await assert.rejects(client().getJob(id), JobNotFoundError);
      assert.deepEqual(await claim('sq-typed'), []);
      assert.deepEqual(await storage.attempts.list({ jobId: id }), []);
      assert.deepEqual(await storage.effects.list({ jobId: id, limit: 10 }), []);
      const again = await client().enqueue('sq-typed', { n: 2 }, { idempotencyKey: 'rollback' });
      assert.equal(again.created, true, 'the key was never held');
      assert.deepEqual((await claim('sq-typed')).map((j) => j.id), [again.id]);
    });

    it('open: the storage neither sees nor claims the job until the commit', async () => {
      db.exec('BEGIN IMMEDIATE');
      const { id } = await client().enqueue('sq-plain', { n: 4 }, { tx: db });
      assert.equal(await storage.jobs.get({ id }), null, 'not visible while the transaction is open');
      // the caller holds SQLite's write lock: the claim waits its busy timeout, then gives up
      const during = await claim('sq-plain').then((r) => r.map((j) => j.id), (e: unknown) => (e instanceof TransientStorageError ? [] : Promise.reject(e)));
      assert.deepEqual(during, [], 'not claimed while the transaction is open');
      db.exec('COMMIT');
      assert.deepEqual((await claim('sq-plain')).map((j) => j.id), [id]);
    });

    it('bad input: a ValidationError before anything is written, and the transaction goes on', async () => {
      db.exec('BEGIN');
      await assert.rejects(client().enqueue('sq-typed', { n: 'five' } as never, { tx: db }), (e: unknown) => e instanceof ValidationError && e.code === 'PAYLOAD_SCHEMA');
      db.prepare('INSERT INTO orders (id) VALUES (?)').run(3);
      db.exec('COMMIT');
      assert.deepEqual(orders(), [1, 3]);
      assert.deepEqual(await claim('sq-typed'), []);
    });

    it('refuses a handle outside a transaction, on another file, closed, or no handle at all; nothing is written', async () => {
      const refused = (tx: unknown, why: RegExp) => assert.rejects(client().enqueue('sq-plain', { n: 5 }, { tx }), (e: unknown) => e instanceof ValidationError && why.test(e.message));
      await refused(db, /no open transaction/);
      const elsewhere = open(tempFile());
      elsewhere.exec('BEGIN');
      await refused(elsewhere, /not on the storage's file/);
      elsewhere.close();
      await refused(elsewhere, /closed/);
      await refused({ query: () => undefined }, /must be your better-sqlite3 Database/);
      assert.deepEqual(await claim('sq-plain'), []);
    });
  });
}

describe('sqlite: an in-memory storage', () => {
  it('refuses every `tx`: no other handle can share its database', async () => {
    const storage = sqliteStorage({ path: ':memory:' });
    await storage.migrate();
    const db = new Database(':memory:');
    db.exec('BEGIN');
    await assert.rejects(createClient({ storage }).enqueue('x', {}, { tx: db }), (e: unknown) => e instanceof ValidationError && /in memory/.test(e.message));
    db.close();
    await storage.close();
  });
});
