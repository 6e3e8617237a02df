/**
 * `client.enqueueSync` inside the caller's synchronous better-sqlite3 transaction
 * (`db.transaction(fn)`, where nothing can be awaited): the job commits with the caller's row,
 * a throw rolls both back (no job, no history), a job in a transaction still open is claimed by
 * no other connection, and bad input (including a schema that validates asynchronously) throws
 * before anything is written.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { z } from 'zod';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { Storage } from '../../src/core/storage.js';
import { JobNotFoundError, NotSupportedError, ValidationError, Worker, createClient, defineJob } from '../../src/index.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { type SqliteStorage, sqliteStorage } from '../../src/storage/sqlite/index.js';
import { tempFiles } from '../storage/sqlite-support.js';

const tempFile = tempFiles();
const CLAIM_CHILD = path.join(import.meta.dirname, 'fixtures', 'sqlite-claim.ts');

/** A Standard Schema whose validate answers with a promise, as an async refinement makes it. */
const asyncSchema: StandardSchemaV1<{ n: number }> = {
  '~standard': { version: 1, vendor: 'test', validate: async (value) => ({ value: value as { n: number } }) },
};
const plain = defineJob({ type: 'sync-plain', handler: () => undefined });
const typed = defineJob({ type: 'sync-typed', schema: z.object({ n: z.number() }), concurrencyKey: (p) => `n:${p.n}`, handler: () => undefined });
const slow = defineJob({ type: 'sync-async-schema', schema: asyncSchema, handler: () => undefined });
const zodAsync = defineJob({ type: 'sync-zod-async', schema: z.object({ n: z.number() }).refine(async () => true), handler: () => undefined });
const jobs = [plain, typed, slow, zodAsync];

describe('sqlite: enqueueSync in your better-sqlite3 db.transaction', () => {
  let file: string;
  let storage: SqliteStorage;
  let db: Database.Database;
  const client = () => createClient({ storage, jobs });
  const claim = (type: string) => storage.leases.claim({ workerId: 'other', types: [type], queues: null, limit: 10, leaseMs: 60_000 });
  const orders = () => (db.prepare('SELECT id FROM orders ORDER BY id').all() as { id: number }[]).map((r) => r.id);
  const jobCount = () => (db.prepare('SELECT count(*) AS n FROM leasehold_jobs').get() as { n: number }).n;
  before(async () => {
    file = tempFile();
    storage = sqliteStorage({ path: file, busyTimeoutMs: 50 });
    await storage.migrate();
    db = new Database(file);
    db.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY)');
  });
  after(async () => {
    db?.close();
    await storage?.close();
  });

  it('commit: the job lands with your row, typed defaults applied, and the storage claims it', async () => {
    const placeOrder = db.transaction((id: number) => {
      db.prepare('INSERT INTO orders (id) VALUES (?)').run(id);
      return client().enqueueSync('sync-typed', { n: id }, { tx: db, idempotencyKey: `order:${id}` });
    });
    const job = placeOrder(1);
    assert.equal(job.created, true);
    assert.deepEqual(orders(), [1]);
    const stored = await client().getJob(job.id);
    assert.deepEqual([stored.type, stored.status, stored.payload, stored.concurrencyKey], ['sync-typed', 'queued', { n: 1 }, 'n:1']);
    assert.deepEqual((await claim('sync-typed')).map((j) => j.id), [job.id]);
    // the same key inside another transaction answers the existing job
    const again = db.transaction(() => client().enqueueSync('sync-typed', { n: 1 }, { tx: db, idempotencyKey: 'order:1' }))();
    assert.deepEqual([again.id, again.created], [job.id, false]);
  });

  it('a throw inside db.transaction rolls back: no job, no attempt, no event, the key free again', async () => {
    let id = '';
    assert.throws(
      db.transaction(() => {
        db.prepare('INSERT INTO orders (id) VALUES (?)').run(2);
        id = client().enqueueSync('sync-plain', { n: 2 }, { tx: db, idempotencyKey: 'rolled-back' }).id;
        throw new Error('payment declined');
      }),
      /payment declined/,
    );
    assert.notEqual(id, '', 'the enqueue ran before the throw');
    assert.deepEqual(orders(), [1]);
    await assert.rejects(client().getJob(id), JobNotFoundError);
    assert.deepEqual(await storage.attempts.list({ jobId: id }), []);
    assert.deepEqual(await storage.jobs.events({ jobId: id }), []);
    assert.deepEqual(await claim('sync-plain'), []);
    const later = await client().enqueue('sync-plain', { n: 3 }, { idempotencyKey: 'rolled-back' });
    assert.equal(later.created, true, 'the key was never held');
    assert.deepEqual((await claim('sync-plain')).map((j) => j.id), [later.id]);
  });

  it('open: a claim on another connection (another process) does not get the job until the commit', async () => {
    const seen = db.transaction(() => {
      const { id } = client().enqueueSync('sync-plain', { n: 4 }, { tx: db });
      // the transaction is open while this blocks: the child claims on its own connection
      const run = spawnSync(process.execPath, ['--import', 'tsx', CLAIM_CHILD, file, 'sync-plain'], { encoding: 'utf8' });
      assert.equal(run.status, 0, run.stderr);
      return { id, child: JSON.parse(run.stdout.trim()) as { claimed?: string[]; busy?: true } };
    })();
    assert.ok(seen.child.busy === true || seen.child.claimed?.length === 0, `claimed while open: ${JSON.stringify(seen.child)}`);
    assert.deepEqual((await claim('sync-plain')).map((j) => j.id), [seen.id]);
  });

  it('open: a running worker on another connection runs the job only after the commit', async () => {
    const workerStorage = sqliteStorage({ path: file, busyTimeoutMs: 50 });
    const ran: string[] = [];
    let claimDuringTx: ((outcome: string) => void) | null = null;
    const triedDuringTx = new Promise<string>((r) => (claimDuringTx = r));
    let txOpen = false;
    const claimOf = workerStorage.leases.claim.bind(workerStorage.leases);
    workerStorage.leases.claim = async (p) => {
      const during = txOpen;
      try {
        const got = await claimOf(p);
        if (during) claimDuringTx?.(`claimed ${got.length}`);
        return got;
      } catch (e) {
        if (during) claimDuringTx?.(`failed: ${(e as Error).message}`);
        throw e;
      }
    };
    let done: () => void = () => {};
    const finished = new Promise<void>((r) => (done = r));
    const job = defineJob({ type: 'sync-run', handler: (_p, ctx) => { ran.push(ctx.job.id); done(); } });
    const worker = new Worker({ storage: workerStorage, jobs: [job], pollIntervalMs: 20, sweeper: false, scheduler: false, logger: pino({ level: 'silent' }) });
    await worker.start();
    try {
      // a transaction held across awaits (BEGIN … COMMIT on your handle) is one enqueueSync writes in too
      db.exec('BEGIN');
      const { id } = createClient({ storage, jobs: [job] }).enqueueSync('sync-run', {}, { tx: db });
      txOpen = true;
      const outcome = await triedDuringTx;
      txOpen = false;
      assert.deepEqual(ran, [], `ran while the transaction was open (the claim ${outcome})`);
      db.exec('COMMIT');
      await finished;
      assert.deepEqual(ran, [id]);
    } finally {
      if (db.inTransaction) db.exec('ROLLBACK');
      await worker.stop();
      await workerStorage.close();
    }
  });

  it('a wrong payload, or an unknown type: a ValidationError before anything is written, and your transaction goes on', () => {
    const before = jobCount();
    db.transaction(() => {
      assert.throws(() => client().enqueueSync('sync-typed', { n: 'five' } as never, { tx: db }), (e: unknown) => e instanceof ValidationError && e.code === 'PAYLOAD_SCHEMA' && /n:/.test(e.message));
      assert.throws(() => client().enqueueSync('sync-nope' as never, {}, { tx: db }), (e: unknown) => e instanceof ValidationError && e.code === 'UNKNOWN_JOB_TYPE');
      assert.throws(() => client().enqueueSync('sync-plain', { big: 'x'.repeat(70_000) }, { tx: db }), (e: unknown) => e instanceof ValidationError && e.code === 'PAYLOAD_TOO_LARGE');
      db.prepare('INSERT INTO orders (id) VALUES (?)').run(5);
    })();
    assert.deepEqual(orders(), [1, 5]);
    assert.equal(jobCount(), before);
  });

  it('a schema that validates asynchronously is refused, saying so, before anything is written', () => {
    const before = jobCount();
    for (const type of ['sync-async-schema', 'sync-zod-async'] as const) {
      assert.throws(
        () => db.transaction(() => client().enqueueSync(type, { n: 1 }, { tx: db }))(),
        (e: unknown) => e instanceof ValidationError && e.code === 'INVALID_OPTION' && /validates asynchronously/.test(e.message) && e.message.includes(type) && /enqueueSync/.test(e.message),
      );
    }
    assert.equal(jobCount(), before);
  });

  it('without `tx`, outside a transaction, or on a handle of another file: refused, nothing written', () => {
    const before = jobCount();
    assert.throws(() => client().enqueueSync('sync-plain', {}, {} as never), (e: unknown) => e instanceof ValidationError && /only in your transaction/.test(e.message));
    assert.throws(() => client().enqueueSync('sync-plain', {}, { tx: db }), (e: unknown) => e instanceof ValidationError && /no open transaction/.test(e.message));
    const elsewhere = new Database(tempFile());
    assert.throws(() => elsewhere.transaction(() => client().enqueueSync('sync-plain', {}, { tx: elsewhere }))(), (e: unknown) => e instanceof ValidationError && /not on the storage's file/.test(e.message));
    elsewhere.close();
    assert.equal(jobCount(), before);
  });
});

describe("sqlite: enqueueSync on node:sqlite's DatabaseSync, between your BEGIN and COMMIT", () => {
  it('commit keeps the job, rollback leaves none', async () => {
    const file = tempFile();
    const storage = sqliteStorage({ path: file });
    await storage.migrate();
    const db = new (process.getBuiltinModule('node:sqlite') as typeof import('node:sqlite')).DatabaseSync(file);
    try {
      const client = createClient({ storage, jobs });
      db.exec('BEGIN');
      const gone = client.enqueueSync('sync-typed', { n: 1 }, { tx: db });
      db.exec('ROLLBACK');
      await assert.rejects(client.getJob(gone.id), JobNotFoundError);
      db.exec('BEGIN');
      const kept = client.enqueueSync('sync-typed', { n: 2 }, { tx: db });
      db.exec('COMMIT');
      assert.deepEqual((await client.getJob(kept.id)).payload, { n: 2 });
    } finally {
      db.close();
      await storage.close();
    }
  });
});

describe('enqueueSync on a storage that cannot write synchronously', () => {
  it('throws NotSupportedError, naming the storage', async () => {
    const storage: Storage = memoryStorage();
    await storage.migrate();
    assert.throws(() => createClient({ storage, jobs }).enqueueSync('sync-plain', {}, { tx: {} }), (e: unknown) => e instanceof NotSupportedError && /enqueueSync .* memory/.test(e.message));
  });
});
