/**
 * MySQL/MariaDB flow control and unique keys beyond the conformance suite: a limited claim keeps
 * to the claim's queues, leaves paused queues out and takes failed jobs due again in claim order;
 * what it stores in flow_buckets; a claim without limited types sends the claim's statements
 * only; unique keys in the caller's transaction and on the MySQL insert path (no RETURNING); an
 * operator's retry of a job whose unique key another job holds now.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import type { ClaimParams, NewJob } from '../../src/core/storage.js';
import type { MysqlStorage } from '../../src/storage/mysql/index.js';
import { run } from '../../src/storage/mysql/db.js';
import { prepareInsert } from '../../src/storage/mysql/insert.js';
import { jobsSql } from '../../src/storage/mysql/jobs.js';
import { FEATURES_SQL, featuresOf, tables } from '../../src/storage/mysql/sql.js';
import { insertUniqueOn } from '../../src/storage/mysql/unique-keys.js';
import { serverFor } from '../support/databases.js';
import { job, throwawayDatabase } from './mysql-support.js';

const url = await serverFor('mysql', 'mysql flow control and unique keys');

let n = 0;
const uniq = (p: string): string => `${p}-${++n}-${randomBytes(3).toString('hex')}`;
const claimOf = (types: string[], over: Partial<ClaimParams> = {}): ClaimParams => ({ workerId: 'w', types, queues: null, limit: 10, leaseMs: 60_000, ...over });
const active = (type: string, key: string, over: Partial<NewJob> = {}): NewJob => job(type, { unique: { key, mode: 'active' }, ...over });

describe('mysql: flow control and unique keys', { skip: url === null }, () => {
  const server = throwawayDatabase(url);
  let s: MysqlStorage;
  let admin: mysql.Connection;
  before(async () => {
    s = server.make();
    await s.migrate();
    admin = server.adminConnection();
  });
  const buckets = async (prefix: string): Promise<[string, number | null][]> => {
    const [rows] = (await admin.query(`SELECT name, tokens FROM \`${server.db}\`.leasehold_flow_buckets WHERE name LIKE ? ORDER BY name`, [`${prefix}%`])) as unknown as [{ name: string; tokens: number | null }[]];
    return rows.map((r) => [r.name, r.tokens === null ? null : Math.round(r.tokens)]);
  };

  it('a limited claim keeps to the claim\'s queues and leaves paused queues out', async () => {
    const type = uniq('lq');
    const [q1, q2, q3] = [uniq('q'), uniq('q'), uniq('q')];
    const ids = (await s.jobs.insert({ jobs: [q1, q2, q3].map((queue) => job(type, { queue })) })).map((r) => r.job.id);
    await s.queues.pause({ queue: q1 });
    const flow = { [type]: { maxRunning: 10 } };
    const got = await s.leases.claim(claimOf([type], { queues: [q1, q2], flow }));
    assert.deepEqual(got.map((j) => j.id), [ids[1]], 'q2 only: q1 is paused, q3 not asked for');
    await s.queues.resume({ queue: q1 });
    assert.deepEqual((await s.leases.claim(claimOf([type], { queues: [q1, q2], flow }))).map((j) => j.id), [ids[0]]);
  });

  it('a limited claim takes a failed job due again before a younger queued one', async () => {
    const type = uniq('lf');
    const [first] = await s.jobs.insert({ jobs: [job(type)] });
    const [c] = await s.leases.claim(claimOf([type]));
    const [fin] = await s.leases.finish({ items: [{ id: c!.id, leaseToken: c!.leaseToken, status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } }] });
    assert.equal(fin?.applied, true);
    await s.jobs.insert({ jobs: [job(type)] });
    const got = await s.leases.claim(claimOf([type], { limit: 1, flow: { [type]: { maxRunning: 5 } } }));
    assert.deepEqual(got.map((j) => [j.id, j.attempts]), [[first!.job.id, 2]]);
  });

  it("flow_buckets: the type's row after its first limited claim; a type-wide rate spends it, a per-key rate a row per key", async () => {
    const [capped, rated, perKey] = [uniq('bc'), uniq('br'), uniq('bk')];
    await s.jobs.insert({ jobs: [job(capped), job(rated), job(rated), job(rated), job(perKey, { concurrencyKey: 'x' }), job(perKey, { concurrencyKey: 'x' }), job(perKey)] });
    const hour = 3_600_000;
    const flow = { [capped]: { maxRunning: 1 }, [rated]: { rate: { limit: 5, periodMs: hour } }, [perKey]: { rate: { limit: 4, periodMs: hour, perKey: true } } };
    assert.equal((await s.leases.claim(claimOf([capped, rated, perKey], { flow }))).length, 7);
    assert.deepEqual(await buckets(capped), [[capped, null]], 'a lock row, no bucket');
    assert.deepEqual(await buckets(rated), [[rated, 2]]);
    assert.deepEqual(await buckets(perKey), [[perKey, null], [`${perKey}|`, 3], [`${perKey}|x`, 2]]);
  });

  it('a claim without limited types sends the claim\'s statements only, as one without flow does', async () => {
    const pool = mysql.createPool({ uri: server.dbUrl(server.db), connectionLimit: 2 });
    server.pools.push(pool);
    const sent: string[] = [];
    const record = (o: mysql.QueryOptions) => sent.push(o.sql.trim().split('\n')[0]!);
    const recording = {
      query: (o: mysql.QueryOptions) => (record(o), pool.query(o)),
      getConnection: async () => {
        const c = await pool.getConnection();
        return { query: (o: mysql.QueryOptions) => (record(o), c.query(o)), release: () => c.release(), destroy: () => c.destroy() };
      },
    };
    const r = server.make({ pool: recording as unknown as mysql.Pool });
    const [type, limitedElsewhere] = [uniq('hot'), uniq('other')];
    await r.jobs.insert({ jobs: [job(type), job(type)] });
    sent.length = 0;
    assert.equal((await r.leases.claim(claimOf([type], { limit: 1 }))).length, 1);
    const plain = [...sent];
    sent.length = 0;
    assert.equal((await r.leases.claim(claimOf([type], { limit: 1, flow: { [limitedElsewhere]: { maxRunning: 1 } } }))).length, 1);
    assert.deepEqual(sent, plain);
    assert.deepEqual(plain.filter((q) => /claim/.test(q)).map((q) => q.replace(/:.*/, '')), ['-- leasehold claimJobs', '-- leasehold claimJobs']);
    assert.ok(!sent.some((q) => /claimLimited|queueState/.test(q)));
  });

  it('unique keys in the caller\'s transaction: the second insert finds the first; a rollback leaves neither', async () => {
    const pool = mysql.createPool({ uri: server.dbUrl(server.db), connectionLimit: 1 });
    server.pools.push(pool);
    const conn = await pool.getConnection();
    const [type, key] = [uniq('utx'), uniq('k')];
    try {
      await conn.beginTransaction();
      const [a] = await s.jobs.insert({ jobs: [active(type, key)], tx: conn });
      const [b] = await s.jobs.insert({ jobs: [active(type, key)], tx: conn });
      assert.deepEqual([a?.outcome, b?.outcome, b?.job.id], ['created', 'existing', a?.job.id]);
      await conn.rollback();
      assert.equal(await s.jobs.get({ id: a!.job.id }), null);
      await conn.beginTransaction();
      const [c] = await s.jobs.insert({ jobs: [job(type, { unique: { key, mode: 'debounce' }, payload: 1 })], tx: conn });
      const [d] = await s.jobs.insert({ jobs: [job(type, { unique: { key, mode: 'debounce' }, payload: 2 })], tx: conn });
      await conn.commit();
      assert.deepEqual([c?.outcome, d?.outcome, d?.job.id, d?.job.payload], ['created', 'replaced', c?.job.id, 2]);
      assert.deepEqual(await s.jobs.get({ id: c!.job.id }), d?.job);
    } finally {
      conn.release();
    }
  });

  it('unique keys on the MySQL insert path (no RETURNING) answer as on MariaDB\'s', async () => {
    const [type, key] = [uniq('umy'), uniq('k')];
    const c = await mysql.createConnection(server.dbUrl(server.db));
    try {
      const f = { ...featuresOf((await run(c, FEATURES_SQL))[0]), returning: false };
      const batch = [active(type, key, { payload: 1, concurrencyKey: 'tenant' }), active(type, key, { payload: 2 }), job(type, { payload: 3, unique: { key, mode: 'debounce' } })];
      await c.beginTransaction();
      const res = await insertUniqueOn(c, jobsSql(tables('leasehold_')), prepareInsert(batch), f, false);
      await c.commit();
      assert.deepEqual(res.map((r) => [r.outcome, r.job.id, r.job.payload]), [['created', res[0]!.job.id, 1], ['existing', res[0]!.job.id, 1], ['replaced', res[0]!.job.id, 3]]);
      assert.deepEqual([res[0]!.job.uniqueKey, res[0]!.job.concurrencyKey], [key, 'tenant']);
      assert.deepEqual(await s.jobs.get({ id: res[0]!.job.id }), res[2]!.job);
    } finally {
      await c.end();
    }
  });

  it("an operator's retry of a job whose unique key another job holds now: it comes back without the key", async () => {
    const [type, key] = [uniq('ur'), uniq('k')];
    const [old] = await s.jobs.insert({ jobs: [active(type, key)] });
    const [c] = await s.leases.claim(claimOf([type]));
    await s.leases.finish({ items: [{ id: c!.id, leaseToken: c!.leaseToken, status: 'dead', attempt: { outcome: 'dead' } }] });
    const [now] = await s.jobs.insert({ jobs: [active(type, key)] });
    assert.equal(now?.outcome, 'created', 'a dead job holds no key');
    const back = await s.jobs.retry({ id: old!.job.id });
    assert.deepEqual([back.applied, back.job?.status, back.job?.uniqueKey], [true, 'queued', undefined]);
    assert.equal((await s.jobs.get({ id: now!.job.id }))?.uniqueKey, key, 'the holder keeps it');
    const again = await s.jobs.insert({ jobs: [active(type, key)] });
    assert.deepEqual(again.map((r) => [r.outcome, r.job.id]), [['existing', now!.job.id]]);
  });
});
