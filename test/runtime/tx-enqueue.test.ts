/**
 * The caller's own transaction, at the client and handler level, on PostgreSQL and on
 * MySQL/MariaDB (a missing server skips its kind loudly):
 * - `client.enqueue(type, payload, { tx })` inside BEGIN … ROLLBACK: the job never exists and a
 *   running worker never runs it; inside BEGIN … COMMIT: invisible until the commit, then it runs;
 * - `ctx.succeedInTransaction(tx)`: the handler's own row and the job's completion commit
 *   together; rolled back after the call, neither lands, the lease lapses and the job is retried.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { Storage } from '../../src/core/storage.js';
import { defineJob } from '../../src/index.js';
import type { JobContext } from '../../src/index.js';
import { Client } from '../../src/runtime/client.js';
import { Worker } from '../../src/runtime/worker.js';
import { mysqlStorage } from '../../src/storage/mysql/index.js';
import { postgresStorage } from '../../src/storage/postgres/index.js';
import type { ServerKind } from '../support/databases.js';
import { serverFor } from '../support/databases.js';

import { LogCapture, sleep, waitFor } from './support.js';

/** long enough that a renewal late on a busy server never lapses a lease the tests keep */
const LEASE_MS = 1_500;

/** The caller's transaction on their own connection. */
interface CallerTx {
  /** what to pass as `tx` */
  handle: unknown;
  insertRow(jobId: string, attempt: number): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

/** A fresh schema / database with the caller's own table `tx_rows`, and the caller's pool. */
interface World {
  storage: Storage;
  begin(): Promise<CallerTx>;
  rows(): Promise<{ jobId: string; attempt: number }[]>;
  drop(): Promise<void>;
}

async function postgresWorld(url: string): Promise<World> {
  const schema = `lh_tx_${randomBytes(5).toString('hex')}`;
  const storage = postgresStorage({ connectionString: url, schema, poolSize: 4 });
  await storage.migrate();
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  await pool.query(`CREATE TABLE "${schema}".tx_rows (job_id bigint NOT NULL, attempt int NOT NULL)`);
  return {
    storage,
    begin: async () => {
      const c = await pool.connect();
      await c.query('BEGIN');
      const end = async (sql: string) => {
        try {
          await c.query(sql);
        } finally {
          c.release();
        }
      };
      return {
        handle: c,
        insertRow: async (jobId, attempt) => void (await c.query(`INSERT INTO "${schema}".tx_rows (job_id, attempt) VALUES ($1, $2)`, [jobId, attempt])),
        commit: () => end('COMMIT'),
        rollback: () => end('ROLLBACK'),
      };
    },
    rows: async () =>
      (await pool.query(`SELECT job_id::text AS "jobId", attempt FROM "${schema}".tx_rows ORDER BY job_id, attempt`)).rows as { jobId: string; attempt: number }[],
    drop: async () => {
      await storage.close();
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => pool.end());
    },
  };
}

async function mysqlWorld(url: string): Promise<World> {
  const db = `lh_tx_${randomBytes(5).toString('hex')}`;
  const admin = await mysql.createConnection(url);
  await admin.query(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4`);
  const u = new URL(url);
  u.pathname = `/${db}`;
  const storage = mysqlStorage({ uri: u.toString(), poolSize: 4 });
  await storage.migrate();
  const pool = mysql.createPool({ uri: u.toString(), connectionLimit: 4 });
  await pool.query('CREATE TABLE tx_rows (job_id BIGINT NOT NULL, attempt INT NOT NULL) ENGINE=InnoDB');
  return {
    storage,
    begin: async () => {
      const c = await pool.getConnection();
      await c.beginTransaction();
      const end = async (f: () => Promise<void>) => {
        try {
          await f();
        } finally {
          c.release();
        }
      };
      return {
        handle: c,
        insertRow: async (jobId, attempt) => void (await c.query('INSERT INTO tx_rows (job_id, attempt) VALUES (?, ?)', [jobId, attempt])),
        commit: () => end(() => c.commit()),
        rollback: () => end(() => c.rollback()),
      };
    },
    rows: async () => {
      const [rows] = await pool.query('SELECT CAST(job_id AS CHAR) AS jobId, attempt FROM tx_rows ORDER BY job_id, attempt');
      return (rows as { jobId: string; attempt: number }[]).map((r) => ({ jobId: String(r.jobId), attempt: Number(r.attempt) }));
    },
    drop: async () => {
      await storage.close();
      await pool.end();
      await admin.query(`DROP DATABASE IF EXISTS \`${db}\``).finally(() => admin.end());
    },
  };
}

const KINDS: { kind: ServerKind; open: (url: string) => Promise<World> }[] = [
  { kind: 'postgres', open: postgresWorld },
  { kind: 'mysql', open: mysqlWorld },
];

for (const { kind, open } of KINDS) {
  const url = await serverFor(kind, `runtime transactional enqueue (${kind})`);

  describe(`runtime: the caller's transaction (${kind})`, { skip: url === null ? `${kind} server unreachable` : false }, () => {
    let world: World;
    let worker: Worker;
    let client: Client;
    const log = new LogCapture();
    /** jobs the handlers ran: `type:jobId:attempt` */
    const ran: string[] = [];
    /** per job id: what the `tx-write` handler does on each attempt */
    const plan = new Map<string, ('commit' | 'rollback')[]>();

    const plain = defineJob<{ tag: string }>({
      type: 'plain',
      handler: (_p, ctx: JobContext) => void ran.push(`plain:${ctx.job.id}:${ctx.attempt}`),
    });
    const txWrite = defineJob<Record<string, never>>({
      type: 'tx-write',
      maxAttempts: 5,
      retry: { kind: 'fixed', delayMs: 50 },
      handler: async (_p, ctx: JobContext) => {
        ran.push(`tx-write:${ctx.job.id}:${ctx.attempt}`);
        const what = plan.get(ctx.job.id)?.[ctx.attempt - 1] ?? 'commit';
        const tx = await world.begin();
        try {
          await tx.insertRow(ctx.job.id, ctx.attempt);
          await ctx.succeedInTransaction(tx.handle);
        } catch (e) {
          await tx.rollback();
          throw e;
        }
        // 'rollback': something after the call went wrong and the handler rolled back and moved
        // on; the completion went with it, so the job is still running under a lease that lapses.
        await (what === 'commit' ? tx.commit() : tx.rollback());
      },
    });

    before(async () => {
      world = await open(url!);
      client = new Client({ storage: world.storage, jobs: [plain, txWrite] });
      worker = new Worker({
        storage: world.storage,
        jobs: [plain, txWrite],
        concurrency: 2,
        pollIntervalMs: 20,
        // the rollback test waits for its lapse
        leaseMs: LEASE_MS,
        sweepIntervalMs: 200,
        abortGraceMs: 200,
        logger: log.logger,
      });
      await worker.start();
    });

    after(async () => {
      await worker?.stop({ deadlineMs: 1_000 });
      await world?.drop();
    });

    const succeeded = (id: string) =>
      waitFor(async () => {
        const j = await world.storage.jobs.get({ id });
        return j?.status === 'succeeded' ? j : null;
      }, 20_000, `job ${id} to succeed`);

    it('enqueue inside a transaction that rolls back: the job never exists and never runs', async () => {
      const tx = await world.begin();
      const job = await client.enqueue('plain', { tag: 'rolled-back' }, { tx: tx.handle });
      assert.equal(job.created, true);
      await sleep(150); // the worker polls every 20 ms meanwhile
      assert.equal(await world.storage.jobs.get({ id: job.id }), null, 'not visible outside the open transaction');
      await tx.rollback();
      // A job enqueued afterwards runs: the worker was polling all along and never saw the first.
      const marker = await client.enqueue('plain', { tag: 'marker' });
      await succeeded(marker.id);
      await sleep(100);
      assert.equal(await world.storage.jobs.get({ id: job.id }), null, 'the rolled-back job does not exist');
      assert.ok(!ran.some((r) => r.startsWith(`plain:${job.id}:`)), `never ran: ${ran.join(' ')}`);
      assert.ok(ran.includes(`plain:${marker.id}:1`));
    });

    it('enqueue inside a transaction that commits: invisible until the commit, then it runs', async () => {
      const tx = await world.begin();
      const job = await client.enqueue('plain', { tag: 'committed' }, { tx: tx.handle });
      await sleep(150);
      assert.equal(await world.storage.jobs.get({ id: job.id }), null, 'not visible before the commit');
      assert.ok(!ran.some((r) => r.startsWith(`plain:${job.id}:`)));
      await tx.commit();
      const done = await succeeded(job.id);
      assert.equal(done.attempts, 1);
      assert.deepEqual(ran.filter((r) => r.startsWith(`plain:${job.id}:`)), [`plain:${job.id}:1`]);
    });

    it('succeedInTransaction + COMMIT: the handler\'s row and the completion land together', async () => {
      const job = await client.enqueue('tx-write', {});
      const done = await succeeded(job.id);
      assert.equal(done.attempts, 1);
      assert.equal(done.lockedBy, null);
      assert.deepEqual((await world.rows()).filter((r) => r.jobId === job.id), [{ jobId: job.id, attempt: 1 }]);
      const attempts = await world.storage.attempts.list({ jobId: job.id });
      assert.deepEqual(attempts.map((a) => [a.attempt, a.outcome]), [[1, 'succeeded']]);
      assert.ok(attempts[0]?.finishedAt);
      // the handler's commit lands the success before the worker, once the handler returned, logs it
      await waitFor(() => log.events('job.succeeded', job.id).some((e) => e.inTransaction === true), 10_000, 'the success logged as in the transaction');
    });

    it('succeedInTransaction then ROLLBACK: neither lands; the lease lapses and the job is retried', async () => {
      const job = await client.enqueue('tx-write', {}, { idempotencyKey: `rb-${randomBytes(3).toString('hex')}` });
      plan.set(job.id, ['rollback', 'commit']);
      const done = await succeeded(job.id);
      assert.equal(done.attempts, 2);
      assert.deepEqual(ran.filter((r) => r.startsWith(`tx-write:${job.id}:`)), [`tx-write:${job.id}:1`, `tx-write:${job.id}:2`]);
      // only attempt 2's row: attempt 1's went with its rollback
      assert.deepEqual((await world.rows()).filter((r) => r.jobId === job.id), [{ jobId: job.id, attempt: 2 }]);
      const attempts = await world.storage.attempts.list({ jobId: job.id });
      assert.deepEqual(
        attempts.map((a) => [a.attempt, a.outcome]),
        [
          [1, 'lease_expired'],
          [2, 'succeeded'],
        ],
      );
      assert.ok(attempts[0]!.finishedAt!.getTime() - attempts[0]!.startedAt.getTime() >= LEASE_MS, 'attempt 1 ended only when its lease lapsed');
    });
  });
}
