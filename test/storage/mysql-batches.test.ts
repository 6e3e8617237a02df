/**
 * The MySQL/MariaDB adapter's set-based paths where the conformance suite rarely goes: finish
 * batches with more distinct endings than get their own UPDATE (the JSON_TABLE join), the
 * MySQL insert path without RETURNING (run here against MariaDB), INSERTs split in chunks,
 * racing idempotency keys, claims merging queued and failed rows, and the one-statement-at-a-
 * time path a caller's pool takes.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import type { ClaimedJob, ErrorInfo, FinishParams, JobRow, NewJob, Storage } from '../../src/core/storage.js';
import { MysqlStorage, mysqlStorage } from '../../src/storage/mysql/index.js';
import { run } from '../../src/storage/mysql/db.js';
import { insertJobsOn, prepareInsert } from '../../src/storage/mysql/insert.js';
import { jobsSql } from '../../src/storage/mysql/jobs.js';
import { FEATURES_SQL, featuresOf, tables } from '../../src/storage/mysql/sql.js';
import { serverFor } from '../support/databases.js';

const url = await serverFor('mysql', 'mysql batches');

let n = 0;
const uniq = (p: string): string => `${p}-${++n}-${randomBytes(3).toString('hex')}`;
function job(type: string, over: Partial<NewJob> = {}): NewJob {
  return { queue: 'default', type, payload: { a: 1 }, priority: 0, runAfterMs: 0, maxAttempts: 5, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000, ...over };
}
const E1: ErrorInfo = { code: 'E_ONE', message: 'first way to fail', stack: 'Error: one\n    at x (a.ts:1:1)' };
const E2: ErrorInfo = { code: 'E_TWO', message: 'second way — ünïcode 🚀', stack: null };

/** Ways to end an attempt, each different in something the UPDATE writes. */
const ENDINGS: ((c: ClaimedJob) => FinishParams)[] = [
  (c) => ({ id: c.id, leaseToken: c.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }),
  (c) => ({ id: c.id, leaseToken: c.leaseToken, status: 'failed', runAfterMs: 60_000, error: E1, attempt: { outcome: 'failed', error: E1, retryDelayMs: 60_000 } }),
  (c) => ({ id: c.id, leaseToken: c.leaseToken, status: 'dead', error: E2, attempt: { outcome: 'dead', error: E2 } }),
  (c) => ({ id: c.id, leaseToken: c.leaseToken, status: 'queued', runAfterMs: 5_000, uncountAttempt: true, attempt: { outcome: 'snoozed', retryDelayMs: 5_000 } }),
  (c) => ({ id: c.id, leaseToken: c.leaseToken, status: 'cancelled', error: E1, attempt: { outcome: 'cancelled', error: E2 } }),
  (c) => ({ id: c.id, leaseToken: c.leaseToken, status: 'failed', runAfterMs: 0, error: null, attempt: { outcome: 'failed' } }),
];

/** What a finish wrote, without ids and times that differ between two runs. */
async function outcome(s: Storage, id: string): Promise<unknown> {
  const j = (await s.jobs.get({ id }))!;
  const [a] = await s.attempts.list({ jobId: id });
  return {
    status: j.status, attempts: j.attempts, lastErrorCode: j.lastErrorCode, lastError: j.lastError, lease: [j.lockedBy, j.leaseToken, j.lockedUntil],
    finished: j.finishedAt !== null, delayS: Math.round((j.runAt.getTime() - j.updatedAt.getTime()) / 1000),
    attempt: a && [a.outcome, a.errorCode, a.errorMessage, a.errorStack, a.retryDelayMs, a.durationMs === a.finishedAt!.getTime() - a.startedAt.getTime()],
  };
}

if (url !== null) {
  const dbUrl = (db: string): string => Object.assign(new URL(url), { pathname: `/${db}` }).toString();

  describe('mysql: set-based job paths', () => {
    const db = `lh_t_${randomBytes(6).toString('hex')}`;
    let admin: mysql.Connection;
    let s: MysqlStorage;
    let other: MysqlStorage;
    before(async () => {
      admin = await mysql.createConnection(url);
      await admin.query(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4`);
      s = mysqlStorage({ uri: dbUrl(db), poolSize: 4 });
      other = mysqlStorage({ uri: dbUrl(db), poolSize: 4 });
      await s.migrate();
    });
    after(async () => {
      await s.close();
      await other.close();
      await admin.query(`DROP DATABASE IF EXISTS \`${db}\``);
      await admin.end();
    });

    const claimAll = async (st: Storage, type: string, count: number): Promise<ClaimedJob[]> => {
      const got = await st.leases.claim({ workerId: 'w', types: [type], queues: null, limit: count, leaseMs: 60_000 });
      assert.equal(got.length, count);
      return got.sort((x, y) => Number(x.id) - Number(y.id));
    };

    it('a batch ending every way at once lands each item exactly as a finish of its own would', async () => {
      const type = uniq('mix');
      await s.jobs.insert({ jobs: ENDINGS.flatMap(() => [job(type), job(type)]) });
      const claimed = await claimAll(s, type, ENDINGS.length * 2);
      const batch = claimed.slice(0, ENDINGS.length);
      const alone = claimed.slice(ENDINGS.length);
      // in reverse id order, with a stale token and a repeat in between: input order is kept
      const items = batch.map((c, i) => ENDINGS[i]!(c)).reverse();
      items.splice(2, 0, { ...items[0]!, leaseToken: 'f'.repeat(32) });
      items.push({ ...items[1]!, status: 'dead', attempt: { outcome: 'dead' } });
      const res = await s.leases.finish({ items });
      assert.deepEqual(res.map((r) => r.applied), [true, true, false, true, true, true, true, false]);
      assert.deepEqual(res.map((r) => r.id), items.map((f) => f.id));
      for (const [i, c] of alone.entries()) assert.deepEqual(await s.leases.finish({ items: [ENDINGS[i]!(c)] }), [{ id: c.id, applied: true }]);
      for (let i = 0; i < ENDINGS.length; i++) assert.deepEqual(await outcome(s, batch[i]!.id), await outcome(s, alone[i]!.id), `ending ${i}`);
    });

    it('onlyIfExpired items in a mixed batch land only on expired leases', async () => {
      const type = uniq('exp');
      await s.jobs.insert({ jobs: [job(type), job(type), job(type), job(type)] });
      const short = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 2, leaseMs: 1 });
      const long = await claimAll(s, type, 2);
      await new Promise((r) => setTimeout(r, 20));
      const sweep = (c: ClaimedJob, e: ErrorInfo): FinishParams => ({ id: c.id, leaseToken: c.leaseToken, status: 'failed', runAfterMs: 0, error: e, attempt: { outcome: 'lease_expired', error: e }, onlyIfExpired: true });
      const res = await s.leases.finish({ items: [sweep(short[0]!, E1), sweep(long[0]!, E1), sweep(short[1]!, E2), sweep(long[1]!, E2), ENDINGS[2]!(long[1]!)] });
      assert.deepEqual(res.map((r) => r.applied), [true, false, true, false, true]);
      assert.equal((await s.jobs.get({ id: long[0]!.id }))!.status, 'running');
      assert.equal((await s.attempts.list({ jobId: long[0]!.id }))[0]!.outcome, 'running');
      assert.equal((await s.jobs.get({ id: short[1]!.id }))!.lastErrorCode, 'E_TWO');
    });

    it('claims merge due queued and failed rows in claim order', async () => {
      const type = uniq('merge');
      await s.jobs.insert({ jobs: [job(type, { payload: 'q5', priority: 5 }), job(type, { payload: 'f1', priority: 1 }), job(type, { payload: 'q0', priority: 0 }), job(type, { payload: 'f3', priority: 3 })] });
      const first = await claimAll(s, type, 4);
      const fail = first.filter((c) => String(c.payload).startsWith('f'));
      await s.leases.finish({ items: first.map((c) => (fail.includes(c) ? ENDINGS[5]!(c) : { id: c.id, leaseToken: c.leaseToken, status: 'queued', runAfterMs: 0, uncountAttempt: true, attempt: { outcome: 'handed_back' } })) });
      const again = await s.leases.claim({ workerId: 'w', types: [type], queues: ['default'], limit: 3, leaseMs: 60_000 });
      assert.deepEqual(again.map((c) => c.payload), ['q0', 'f1', 'f3']);
      assert.deepEqual(again.map((c) => c.attempts), [1, 2, 2]);
      const [rest] = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 3, leaseMs: 60_000 });
      assert.equal(rest!.payload, 'q5');
      for (const c of [...again, rest!]) assert.deepEqual(await s.jobs.get({ id: c.id }), c, 'the claimed row is the stored row');
    });

    it('the MySQL insert path (no RETURNING) gives the same results as MariaDB\'s', async () => {
      const type = uniq('ins');
      const [k1, k2] = [uniq('k'), uniq('k')];
      await s.jobs.insert({ jobs: [job(type, { idempotencyKey: k1, payload: 'existing' })] });
      const batch = [job(type, { payload: 0 }), job(type, { idempotencyKey: k1 }), job(type, { idempotencyKey: k2, payload: 2, runAt: new Date(Date.UTC(2031, 0, 2, 3, 4, 5, 678)) }), job(type, { idempotencyKey: k2, payload: 3 }), job(type, { payload: 4, runAfterMs: 60_000, concurrencyKey: 'tenant:4' })];
      const c = await mysql.createConnection(dbUrl(db));
      try {
        const f = featuresOf((await run(c, FEATURES_SQL))[0]);
        await c.beginTransaction();
        const res = await insertJobsOn(c, jobsSql(tables('leasehold_')), prepareInsert(batch), { ...f, returning: false });
        await c.commit();
        assert.deepEqual(res.map((r) => [r.created, r.job.payload]), [[true, 0], [false, 'existing'], [true, 2], [false, 2], [true, 4]]);
        assert.equal(res[3]!.job.id, res[2]!.job.id);
        assert.equal(res[2]!.job.runAt.toISOString(), '2031-01-02T03:04:05.678Z');
        for (const r of res) assert.deepEqual(await s.jobs.get({ id: r.job.id }), r.job);
      } finally {
        await c.end();
      }
    });

    it('one job is one INSERT … VALUES … RETURNING, not a JSON_TABLE, and comes back as stored', async () => {
      const type = uniq('one');
      const c = await mysql.createConnection(dbUrl(db));
      const sent: string[] = [];
      const recorder = { query: (o: mysql.QueryOptions) => (sent.push(o.sql), c.query(o)) };
      try {
        const f = featuresOf((await run(c, FEATURES_SQL))[0]);
        const items = [job(type, { payload: { deep: [1, 'ü'] } }), job(type, { runAt: new Date(Date.UTC(2031, 0, 2, 3, 4, 5, 678)) }), job(type, { runAfterMs: 90_000, idempotencyKey: uniq('k') }), job(type, { concurrencyKey: 'tenant:1' })];
        for (const item of items) {
          sent.length = 0;
          const [r] = await insertJobsOn(recorder, jobsSql(tables('leasehold_')), prepareInsert([item]), f);
          assert.deepEqual(await s.jobs.get({ id: r!.job.id }), r!.job);
          assert.equal(r!.created, true);
          const inserts = sent.filter((q) => /^-- leasehold insertJobs: insert/.test(q));
          assert.deepEqual(inserts.map((q) => q.split('\n')[0]), ['-- leasehold insertJobs: insert one queued job']);
          assert.doesNotMatch(inserts[0]!, /JSON_TABLE/);
        }
      } finally {
        await c.end();
      }
    });

    it('a batch larger than one INSERT comes back whole, in order', async () => {
      const type = uniq('big');
      const pad = 'x'.repeat(1500);
      const res = await s.jobs.insert({ jobs: Array.from({ length: 1500 }, (_, i) => job(type, { payload: { i, pad }, idempotencyKey: i % 500 === 7 ? uniq('k') : null })) });
      assert.equal(res.length, 1500);
      assert.ok(res.every((r, i) => r.created && (r.job.payload as { i: number }).i === i));
      assert.ok(res.every((r, i) => i === 0 || Number(r.job.id) > Number(res[i - 1]!.job.id)), 'ids increase in input order');
      assert.equal((await s.queues.counts()).find((c) => c.type === type)?.count, 1500);
    });

    it('two processes racing on the same idempotency keys: one row per key, both see it', async () => {
      const type = uniq('race');
      const keys = Array.from({ length: 40 }, () => uniq('k'));
      const mk = (ks: string[]) => ks.map((k) => job(type, { idempotencyKey: k }));
      const [a, b] = await Promise.all([s.jobs.insert({ jobs: mk(keys) }), other.jobs.insert({ jobs: mk([...keys].reverse()) })]);
      const rowsA = new Map(a.map((r) => [r.job.idempotencyKey, r]));
      for (const r of b) {
        const mine = rowsA.get(r.job.idempotencyKey)!;
        assert.equal(r.job.id, mine.job.id);
        assert.equal(Number(r.created) + Number(mine.created), 1, 'created exactly once');
      }
      assert.equal((await s.queues.counts()).find((c) => c.type === type)?.count, keys.length);
    });

    it('keys the database matches but JavaScript does not (a PAD SPACE collation) still return the existing row', async () => {
      const t = mysqlStorage({ uri: dbUrl(db), tablePrefix: 'pad_' });
      try {
        await t.migrate();
        await admin.query(`ALTER TABLE \`${db}\`.pad_jobs MODIFY idempotency_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL`);
        const type = uniq('pad');
        const [first] = await t.jobs.insert({ jobs: [job(type, { idempotencyKey: 'k', payload: 'first' })] });
        const res = await t.jobs.insert({ jobs: [job(type, { payload: 'new' }), job(type, { idempotencyKey: 'k ', payload: 'dup' }), job(type, { idempotencyKey: 'j', payload: 'j' }), job(type, { idempotencyKey: 'j ', payload: 'j2' })] });
        assert.deepEqual(res.map((r) => [r.created, r.job.payload]), [[true, 'new'], [false, 'first'], [true, 'j'], [false, 'j']]);
        assert.equal(res[1]!.job.id, first!.job.id);
      } finally {
        await t.close();
      }
    });

    it('on a caller\'s pool (one statement per query) claims, finishes and inserts the same way', async () => {
      const pool = mysql.createPool({ uri: dbUrl(db), connectionLimit: 2 });
      const p = mysqlStorage({ pool });
      try {
        const type = uniq('pool');
        const ins = await p.jobs.insert({ jobs: [job(type), job(type), job(type, { idempotencyKey: uniq('k') })] });
        assert.deepEqual(ins.map((r) => r.created), [true, true, true]);
        const claimed = await claimAll(p, type, 3);
        const res = await p.leases.finish({ items: [ENDINGS[0]!(claimed[0]!), ENDINGS[1]!(claimed[1]!), ENDINGS[2]!(claimed[2]!), ENDINGS[3]!(claimed[0]!)] });
        assert.deepEqual(res.map((r) => r.applied), [true, true, true, false]);
        const rows = (await Promise.all(claimed.map((c) => p.jobs.get({ id: c.id })))) as JobRow[];
        assert.deepEqual(rows.map((r) => r.status), ['succeeded', 'failed', 'dead']);
      } finally {
        await p.close();
        await pool.end();
      }
    });
  });
}
