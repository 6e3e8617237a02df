/**
 * Many worker hosts on PostgreSQL through PgBouncer in transaction pooling mode: two storages
 * ("hosts") with `pgbouncer: 'transaction'`, their pools' dozen client connections sharing
 * SERVER_POOL server connections of the suite's own bouncer (pgbouncer-support.ts), so
 * consecutive statements of one client land on different server connections. Through it:
 * migrate, enqueue, claim, heartbeat, effects, finish, a drain by two workers, schedules, locks;
 * LISTEN only on a direct `listenUrl`, and polling without one. The storage conformance suite
 * runs through a bouncer too (pgbouncer-conformance.test.ts).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { ValidationError } from '../../src/core/errors.js';
import type { ClaimedJob } from '../../src/core/storage.js';
import { Client } from '../../src/runtime/client.js';
import type { AnyJobDefinition } from '../../src/runtime/job-definition.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { createLocks } from '../../src/runtime/locks.js';
import type { WorkerOptions } from '../../src/runtime/worker.js';
import { Worker } from '../../src/runtime/worker.js';
import { openStorage, parseDbUrl } from '../../src/storage/open.js';
import type { PostgresStorage, PostgresStorageOptions } from '../../src/storage/postgres/index.js';
import { postgresStorage } from '../../src/storage/postgres/index.js';
import { serverFor } from '../support/databases.js';
import { waitFor } from '../runtime/support.js';
import { SERVER_POOL, pgbouncerMissing, startPgbouncer } from './pgbouncer-support.js';
import type { RunningPgbouncer } from './pgbouncer-support.js';
import { job } from './postgres-support.js';

const suite = 'postgres through pgbouncer';
const direct = pgbouncerMissing(suite) === null ? await serverFor('postgres', suite) : null;
const silent = pino({ level: 'silent' });

describe('the pgbouncer option', () => {
  it('comes from the URL, with the direct LISTEN URL percent-encoded; anything but transaction is refused', async () => {
    const listen = 'postgres://app:p%40ss@db:5432/app';
    const p = parseDbUrl(`postgres://app@bouncer:6432/app?schema=s&pgbouncer=transaction&listen=${encodeURIComponent(listen)}`);
    assert.deepEqual(p, { kind: 'postgres', target: 'postgres://app@bouncer:6432/app', schema: 's', pgbouncer: 'transaction', listenUrl: listen });
    for (const bad of ['?pgbouncer=session', '?pgbouncer=', '?pgbouncer=transaction&listen=db:5432']) {
      assert.throws(() => parseDbUrl(`postgres://app@bouncer:6432/app${bad}`), (e: unknown) => e instanceof ValidationError && e.code === 'INVALID_URL', bad);
    }
    const polls = await openStorage('postgres://app@127.0.0.1:1/app?pgbouncer=transaction');
    const listens = await openStorage(`postgres://app@127.0.0.1:1/app?pgbouncer=transaction&listen=${encodeURIComponent(listen)}`);
    assert.equal(polls.capabilities.listenNotify, false, 'no LISTEN through the pooler');
    assert.equal(listens.capabilities.listenNotify, true, 'LISTEN on the direct URL');
    await Promise.all([polls.close(), listens.close()]);
    const opts = { connectionString: 'postgres://app@127.0.0.1:1/app', pgbouncer: 'transaction' } as const;
    assert.throws(() => postgresStorage({ ...opts, pgbouncer: 'session' as 'transaction' }), ValidationError);
    assert.throws(() => postgresStorage({ ...opts, idleTransactionTimeoutMs: 5_000 }), /idle_transaction_timeout/);
  });
});

describe('postgres through pgbouncer (transaction pooling): two hosts', { skip: direct === null }, () => {
  let bouncer: RunningPgbouncer;
  const made: PostgresStorage[] = [];
  const schemas: string[] = [];
  const workers: Worker[] = [];

  before(async () => {
    bouncer = await startPgbouncer(direct as string);
  });

  after(async () => {
    for (const w of workers) await w.stop({ deadlineMs: 1_000 });
    for (const s of made) await s.close();
    const admin = new pg.Client({ connectionString: direct as string });
    await admin.connect();
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
    await bouncer?.stop();
  });

  /** Two hosts on one fresh, migrated schema, each pool's 6 connections open (12 clients of the bouncer). */
  async function twoHosts(opts: Partial<PostgresStorageOptions> = {}): Promise<[PostgresStorage, PostgresStorage]> {
    const schema = `lh_t_${randomBytes(6).toString('hex')}`;
    schemas.push(schema);
    const open = (o: Partial<PostgresStorageOptions>) => {
      const s = postgresStorage({ connectionString: bouncer.url, schema, poolSize: 6, pgbouncer: 'transaction', ...o });
      made.push(s);
      return s;
    };
    const hosts: [PostgresStorage, PostgresStorage] = [open(opts), open({})];
    await Promise.all(hosts.map((h) => h.migrate()));
    await Promise.all(Array.from({ length: 12 }, (_, i) => hosts[i % 2]?.now()));
    return hosts;
  }

  async function worker(storage: PostgresStorage, jobs: readonly AnyJobDefinition[], opts: Partial<WorkerOptions> = {}): Promise<Worker> {
    const w = new Worker({ storage, jobs, concurrency: 8, pollIntervalMs: 50, leaseMs: 5_000, sweeper: false, scheduler: false, logger: silent, ...opts });
    workers.push(w);
    await w.start();
    return w;
  }

  async function succeeded(s: PostgresStorage, type: string): Promise<number> {
    return (await s.queues.counts()).filter((c) => c.type === type && c.status === 'succeeded').reduce((n, c) => n + c.count, 0);
  }

  it('migrate, enqueue, claim, heartbeat, effects and finish, each statement on whichever server connection is free', async () => {
    const [a, b] = await twoHosts();
    const clients = await bouncer.show('CLIENTS');
    const servers = await bouncer.show('SERVERS');
    assert.ok(clients.length >= 12, `${clients.length} client connections`);
    assert.ok(servers.length <= SERVER_POOL, `${servers.length} server connections`);

    await a.jobs.insert({ jobs: Array.from({ length: 30 }, () => job('pgb-flow')) });
    for (let i = 0; i < 10; i++) await (i % 2 ? a : b).jobs.insert({ jobs: [job('pgb-flow')] });
    const [first] = await a.jobs.insert({ jobs: [job('pgb-flow', { idempotencyKey: 'pgb-key' })] });
    const [again] = await b.jobs.insert({ jobs: [job('pgb-flow', { idempotencyKey: 'pgb-key' })] });
    assert.equal(again?.created, false);
    assert.equal(again?.job.id, first?.job.id);

    // the same statements again and again from both hosts: a named statement prepared on one server connection is unknown on the others
    const claim = (i: number) => (i % 2 ? a : b).leases.claim({ workerId: `host-${i % 2}`, types: ['pgb-flow'], queues: null, limit: 3, leaseMs: 30_000 });
    const claimed: ClaimedJob[] = (await Promise.all(Array.from({ length: 16 }, (_, i) => claim(i)))).flat();
    assert.equal(claimed.length, 41);
    assert.equal(new Set(claimed.map((c) => c.id)).size, 41, 'no job claimed twice');

    const leases = claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken }));
    for (let i = 0; i < 4; i++) assert.deepEqual((await (i % 2 ? a : b).leases.heartbeat({ leases, leaseMs: 60_000 })).lost, []);

    const [one, ...rest] = claimed as [ClaimedJob, ...ClaimedJob[]];
    const e1 = { key: `pgb:${one.id}`, jobId: one.id, leaseToken: one.leaseToken };
    assert.deepEqual(await a.effects.reserve(e1), { state: 'reserved' });
    assert.equal(await b.effects.complete({ ...e1, result: { sent: 1 } }), true);
    assert.deepEqual(await b.effects.reserve(e1), { state: 'done', result: { sent: 1 } });
    const many = rest.map((c) => ({ key: `pgb:${c.id}`, jobId: c.id, leaseToken: c.leaseToken }));
    assert.ok((await b.effects.reserveMany?.({ items: many }))?.every((r) => r.state === 'reserved'));
    assert.ok((await a.effects.completeMany?.({ items: many.map((m) => ({ ...m, result: m.key })) }))?.every(Boolean));

    const items = claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } }));
    const results = await Promise.all([a.leases.finish({ items: items.slice(0, 20) }), b.leases.finish({ items: items.slice(20) })]);
    assert.ok(results.flat().every((r) => r.applied));
    assert.equal(await succeeded(b, 'pgb-flow'), 41);
    assert.deepEqual((await a.attempts.list({ jobId: one.id })).map((t) => t.outcome), ['succeeded']);

    // the caller's own transaction through the pooler: the job exists iff it commits
    const app = new pg.Pool({ connectionString: bouncer.url, max: 2 });
    for (const end of ['ROLLBACK', 'COMMIT']) {
      const c = await app.connect();
      await c.query('BEGIN');
      await a.jobs.insert({ jobs: [job(`pgb-tx-${end}`)], tx: c });
      await c.query(end);
      c.release();
    }
    await app.end();
    assert.equal((await b.jobs.list({ type: 'pgb-tx-ROLLBACK', limit: 5 })).length, 0);
    assert.equal((await b.jobs.list({ type: 'pgb-tx-COMMIT', limit: 5 })).length, 1);
  });

  it('two workers drain 300 jobs: each effect once, retries included', async () => {
    const [a, b] = await twoHosts();
    const runs = new Map<number, number>();
    const effects = new Map<number, number>();
    const work = defineJob({
      type: 'pgb-drain',
      retry: { kind: 'exponential', baseMs: 20, factor: 2, maxMs: 100, jitter: 'none' },
      maxAttempts: 3,
      async handler(p: { n: number }, ctx) {
        runs.set(p.n, (runs.get(p.n) ?? 0) + 1);
        await ctx.once(`pgb-drain:${p.n}`, () => effects.set(p.n, (effects.get(p.n) ?? 0) + 1));
        if (p.n % 10 === 0 && ctx.attempt === 1) throw new Error('the first attempt of every tenth job fails');
      },
    });
    const client = new Client({ storage: a, jobs: [work] });
    for (let k = 0; k < 3; k++) await client.enqueueMany(Array.from({ length: 100 }, (_, i) => ({ type: 'pgb-drain', payload: { n: k * 100 + i } })));
    await Promise.all([worker(a, [work]), worker(b, [work])]);
    await waitFor(async () => (await succeeded(a, 'pgb-drain')) === 300, 60_000, '300 jobs succeeded');
    assert.equal(effects.size, 300);
    assert.ok([...effects.values()].every((n) => n === 1), 'every effect ran once');
    for (const [n, count] of runs) assert.equal(count, n % 10 === 0 ? 2 : 1, `runs of job ${n}`);
    assert.ok((await bouncer.show('SERVERS')).length <= SERVER_POOL);
  });

  it('schedules: two schedulers fire every slot once', async () => {
    const [a, b] = await twoHosts();
    const tick = defineJob({ type: 'pgb-tick', handler: async () => {} });
    const schedules = [{ name: 'pgb-every-second', type: 'pgb-tick', everyMs: 1_000 }];
    const opts = { scheduler: true, schedules, schedulerIntervalMs: 100 };
    await Promise.all([worker(a, [tick], opts), worker(b, [tick], opts)]);
    await waitFor(async () => (await succeeded(b, 'pgb-tick')) >= 3, 30_000, 'three slots run');
    const jobs = await a.jobs.list({ type: 'pgb-tick', limit: 100 });
    const slots = jobs.map((j) => j.slotAt?.getTime());
    assert.ok(slots.every((t) => t !== undefined));
    assert.equal(new Set(slots).size, jobs.length, 'one job per slot');
  });

  it('locks: one holder at a time across hosts, fences increasing', async () => {
    const [a, b] = await twoHosts();
    const [la, lb] = [createLocks(a, { owner: 'host-a' }), createLocks(b, { owner: 'host-b' })];
    const held = await la.tryAcquire('pgb-lock', { ttlMs: 30_000 });
    assert.ok(held);
    assert.equal(await lb.tryAcquire('pgb-lock', { ttlMs: 30_000 }), null);
    assert.equal(await la.release(held), true);
    let inside = 0;
    let most = 0;
    const fences: number[] = [];
    await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? la : lb).withLock('pgb-lock', { ttlMs: 30_000, timeoutMs: 30_000, retryMs: 5 }, async (_signal, lock) => {
      most = Math.max(most, ++inside);
      fences.push(lock.fence);
      await a.now();
      inside -= 1;
    })));
    assert.equal(most, 1, 'never two holders');
    assert.deepEqual(fences, [...fences].sort((x, y) => x - y));
    assert.ok((fences[0] as number) > held.fence);
  });

  it('LISTEN on listenUrl, a direct connection, wakes a worker that polls once an hour', async () => {
    const [a, b] = await twoHosts({ listenUrl: direct as string });
    assert.equal(a.capabilities.listenNotify, true);
    const emptyClaims = watchClaims(a);
    const done: string[] = [];
    const wake = defineJob({ type: 'pgb-wake', handler: async (_p, ctx) => void done.push(ctx.job.id) });
    await worker(a, [wake], { pollIntervalMs: 3_600_000 });
    await waitFor(() => emptyClaims() > 0, 10_000, 'the worker idle after an empty claim');
    const { job: enqueued } = (await b.jobs.insert({ jobs: [job('pgb-wake')] }))[0] as { job: { id: string } };
    await waitFor(() => done.includes(enqueued.id), 20_000, 'the job run after a NOTIFY');
    await noListenerThroughBouncer();
  });

  it('without listenUrl nothing LISTENs through the pooler, and workers drain by polling', async () => {
    const [a, b] = await twoHosts();
    assert.equal(a.capabilities.listenNotify, false);
    const emptyClaims = watchClaims(a);
    const poll = defineJob({ type: 'pgb-poll', handler: async () => {} });
    await worker(a, [poll], { pollIntervalMs: 50 });
    await waitFor(() => emptyClaims() > 0, 10_000, 'the worker idle after an empty claim');
    await b.jobs.insert({ jobs: Array.from({ length: 20 }, () => job('pgb-poll')) });
    await waitFor(async () => (await succeeded(b, 'pgb-poll')) === 20, 20_000, '20 jobs run by polling');
    await noListenerThroughBouncer();
  });

  /** Count this storage's claims that came back empty. */
  function watchClaims(s: PostgresStorage): () => number {
    let empty = 0;
    const claim = s.leases.claim.bind(s.leases);
    s.leases.claim = async (p) => {
      const got = await claim(p);
      if (got.length === 0) empty += 1;
      return got;
    };
    return () => empty;
  }

  async function noListenerThroughBouncer(): Promise<void> {
    const names = (await bouncer.show('CLIENTS')).map((c) => String(c.application_name));
    assert.ok(names.includes('leasehold'), 'the pools connect through the bouncer');
    assert.ok(!names.some((n) => n.includes('listener')), `no LISTEN connection through the bouncer: ${names.join(', ')}`);
  }
});
