/**
 * The peers, each through its public API as its docs show it: graphile-worker and pg-boss on
 * PostgreSQL, BullMQ on Redis and on its PostgreSQL backend, plainjob on SQLite. Each at its
 * defaults, and (where its docs name one) at its documented fastest settings.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Queue as BullQueue, Worker as BullWorker, createPostgresBackend } from 'bullmq';
import { run, makeWorkerUtils } from 'graphile-worker';
import { Redis } from 'ioredis';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { JobStatus, better, defineQueue, defineWorker } from 'plainjob';
import type { Producer, SystemDef } from '../common.ts';
import { PG_URL, REDIS, sqliteDir } from '../common.ts';

async function pgExec(sql: string, params: unknown[] = []): Promise<unknown[]> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
}

// ---------------------------------------------------------------------------- graphile-worker

const GW_SCHEMA = 'bench_graphile';
// graphile-worker's own Logger class; a no-op log factory silences it
const silentGw = { scope: () => silentGw, error() {}, warn() {}, info() {}, debug() {} };

function graphile(batched: boolean): SystemDef {
  const preset = batched ? { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } : undefined;
  return {
    id: batched ? 'graphile-batched' : 'graphile',
    db: 'postgres',
    label: batched ? 'graphile-worker 0.18.0, localQueue + batched completion' : 'graphile-worker 0.18.0',
    settings: batched
      ? 'run({concurrency: c, maxPoolSize: max(10, c+2), preset: {worker: {localQueue: {size: 500}, completeJobBatchDelay: 0, failJobBatchDelay: 0}}}) (worker.graphile.org/docs/performance); LISTEN/NOTIFY + 2 s poll'
      : 'run({concurrency: c, maxPoolSize: max(10, c+2)}) defaults (no local queue, one completion per job); LISTEN/NOTIFY + 2 s poll',
    kind: 'peer',
    timeEnqueue: !batched,
    latency: true,
    latencyEveryRound: !batched,
    contextOnly: !batched,
    async reset() {
      await pgExec(`DROP SCHEMA IF EXISTS ${GW_SCHEMA} CASCADE`);
      const u = await makeWorkerUtils({ connectionString: PG_URL, schema: GW_SCHEMA, logger: silentGw as never });
      await u.migrate();
      await u.release();
    },
    async cleanup() {
      await pgExec(`DROP SCHEMA IF EXISTS ${GW_SCHEMA} CASCADE`);
    },
    async producer(): Promise<Producer> {
      const u = await makeWorkerUtils({ connectionString: PG_URL, schema: GW_SCHEMA, logger: silentGw as never });
      const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
      return {
        enqueueOne: async (p) => void (await u.addJob('noop', p)),
        enqueueBulk: async (ps) => void (await u.addJobs(ps.map((payload) => ({ identifier: 'noop', payload })))),
        remaining: async () => Number((await pool.query(`SELECT count(*)::int AS n FROM ${GW_SCHEMA}._private_jobs`)).rows[0].n),
        close: async () => {
          await u.release();
          await pool.end();
        },
      };
    },
    async worker({ concurrency, onJob }) {
      const runner = await run({
        connectionString: PG_URL,
        schema: GW_SCHEMA,
        concurrency,
        maxPoolSize: Math.max(10, concurrency + 2),
        noHandleSignals: true,
        logger: silentGw as never,
        taskList: { noop: async (payload) => void onJob(payload) },
        ...(preset ? { preset: preset as never } : {}),
      });
      return { stop: () => runner.stop() };
    },
  };
}

// ---------------------------------------------------------------------------- pg-boss

const BOSS_SCHEMA = 'bench_pgboss';

function pgBoss(tuned: boolean): SystemDef {
  const ctor = { connectionString: PG_URL, schema: BOSS_SCHEMA, ...(tuned ? { useListenNotify: true } : {}) };
  return {
    id: tuned ? 'pgboss-tuned' : 'pgboss',
    db: 'postgres',
    label: tuned ? 'pg-boss 12.35.0, batch 100 + burst + NOTIFY' : 'pg-boss 12.35.0',
    settings: tuned
      ? 'createQueue(q, {notify: true}); new PgBoss({useListenNotify: true}); work(q, {localConcurrency: c, batchSize: 100, burstWhenBatchFull: true}); NOTIFY wake-ups + 30 s backstop poll'
      : 'work(q, {localConcurrency: c}) defaults: batchSize 1, pollingIntervalSeconds 2 (bound: c jobs per 2 s, so drains are capped)',
    kind: 'peer',
    timeEnqueue: !tuned,
    // defaults: 5 jobs/s at c=10 against 50 jobs/s arriving, so latency only measures the backlog
    latency: tuned,
    contextOnly: !tuned,
    drainCapMs: tuned ? undefined : 3_000,
    async reset() {
      await pgExec(`DROP SCHEMA IF EXISTS ${BOSS_SCHEMA} CASCADE`);
      const boss = new PgBoss(ctor);
      boss.on('error', () => {});
      await boss.start();
      await boss.createQueue('noop', tuned ? { notify: true } : {});
      await boss.stop({ graceful: false, wait: true } as never);
    },
    async cleanup() {
      await pgExec(`DROP SCHEMA IF EXISTS ${BOSS_SCHEMA} CASCADE`);
    },
    async producer(): Promise<Producer> {
      const boss = new PgBoss(ctor);
      boss.on('error', () => {});
      await boss.start();
      return {
        enqueueOne: async (p) => void (await boss.send('noop', p)),
        enqueueBulk: async (ps) => void (await boss.insert('noop', ps.map((data) => ({ data })))),
        remaining: async () =>
          Number(((await pgExec(`SELECT count(*)::int AS n FROM ${BOSS_SCHEMA}.job WHERE state IN ('created','retry','active')`)) as { n: number }[])[0]?.n),
        close: () => boss.stop({ graceful: false, wait: true } as never),
      };
    },
    async worker({ concurrency, onJob }) {
      const boss = new PgBoss(ctor);
      boss.on('error', () => {});
      await boss.start();
      const opts = tuned ? { localConcurrency: concurrency, batchSize: 100, burstWhenBatchFull: true } : { localConcurrency: concurrency };
      await boss.work('noop', opts, async (jobs: { data: unknown }[]) => {
        for (const j of jobs) onJob(j.data);
      });
      return { stop: () => boss.stop({ graceful: false, wait: true, timeout: 2000 } as never) };
    },
  };
}

// ---------------------------------------------------------------------------- BullMQ

const BULL_PREFIX = 'leasehold-bench';
const BULL_PG_SCHEMA = 'bench_bullmq';

function bull(backend: 'redis' | 'postgres'): SystemDef {
  const isPg = backend === 'postgres';
  const connection = isPg ? { connectionString: PG_URL, schema: BULL_PG_SCHEMA, migrate: true } : { ...REDIS, maxRetriesPerRequest: null };
  const extra = isPg ? [createPostgresBackend] : [];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const mkQueue = () => new (BullQueue as any)('noop', { connection, ...(isPg ? {} : { prefix: BULL_PREFIX }) }, ...extra);
  async function dropAll() {
    if (isPg) {
      await pgExec(`DROP SCHEMA IF EXISTS ${BULL_PG_SCHEMA} CASCADE`);
      return;
    }
    const r = new Redis(REDIS);
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${BULL_PREFIX}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await r.del(...keys);
    } while (cursor !== '0');
    await r.quit();
  }
  return {
    id: isPg ? 'bullmq-pg' : 'bullmq-redis',
    db: 'postgres',
    label: isPg ? 'BullMQ 6.7.0 on PostgreSQL' : 'BullMQ 6.7.0 on Redis (no persistence)',
    settings: `Queue/Worker({concurrency: c}) defaults (removeOnComplete false)${isPg ? ', createPostgresBackend, migrate: true' : `, prefix ${BULL_PREFIX}; Redis as configured here (no AOF/RDB)`}`,
    kind: 'peer',
    timeEnqueue: true,
    latency: true,
    contextOnly: true,
    async reset() {
      await dropAll();
      const q = mkQueue();
      await q.waitUntilReady?.();
      await q.close();
    },
    cleanup: dropAll,
    async producer(): Promise<Producer> {
      const q = mkQueue();
      return {
        enqueueOne: async (p) => void (await q.add('noop', p)),
        enqueueBulk: async (ps) => void (await q.addBulk(ps.map((data) => ({ name: 'noop', data })))),
        remaining: async () => {
          const c = (await q.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'paused')) as Record<string, number>;
          return Object.values(c).reduce((a, b) => a + b, 0);
        },
        close: () => q.close(),
      };
    },
    async worker({ concurrency, onJob }) {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const w = new (BullWorker as any)('noop', async (job: { data: unknown }) => void onJob(job.data), { connection, concurrency, ...(isPg ? {} : { prefix: BULL_PREFIX }) }, ...extra);
      w.on('error', () => {});
      await w.waitUntilReady?.();
      return { stop: () => w.close() };
    },
  };
}

// ---------------------------------------------------------------------------- plainjob (SQLite)

const silent = { error() {}, warn() {}, info() {}, debug() {} };

function plainjob(pollMs: number | undefined): SystemDef {
  const file = () => join(sqliteDir(), 'plainjob.db');
  const open = () => defineQueue({ connection: better(new Database(file())), logger: silent });
  return {
    id: pollMs ? 'plainjob-poll10' : 'plainjob',
    db: 'sqlite',
    label: pollMs ? 'plainjob 0.0.14, poll 10 ms' : 'plainjob 0.0.14',
    settings: `defineQueue({connection: better(db)}) (sets WAL + synchronous=NORMAL itself); no concurrency option, so c = c defineWorker() loops in one process; pollIntervall ${pollMs ?? 1000} ms${pollMs ? '' : ' (default)'}`,
    kind: 'peer',
    timeEnqueue: !pollMs,
    latency: true,
    latencyOnly: !!pollMs,
    async reset() {
      for (const f of [file(), `${file()}-wal`, `${file()}-shm`]) rmSync(f, { force: true });
      open().close();
    },
    async cleanup() {
      for (const f of [file(), `${file()}-wal`, `${file()}-shm`]) rmSync(f, { force: true });
    },
    async producer(): Promise<Producer> {
      const q = open();
      return {
        enqueueOne: async (p) => void q.add('noop', p),
        enqueueBulk: async (ps) => void q.addMany('noop', ps),
        remaining: async () => q.countJobs({ status: JobStatus.Pending }) + q.countJobs({ status: JobStatus.Processing }),
        close: async () => q.close(),
      };
    },
    async worker({ concurrency, onJob }) {
      const q = open();
      const ws = Array.from({ length: concurrency }, () =>
        defineWorker('noop', (job) => void onJob(JSON.parse(job.data)), { queue: q, logger: silent, ...(pollMs ? { pollIntervall: pollMs } : {}) }),
      );
      for (const w of ws) void w.start();
      return {
        async stop() {
          await Promise.all(ws.map((w) => w.stop()));
          q.close();
        },
      };
    },
  };
}

export const peerSystems: SystemDef[] = [
  graphile(false),
  graphile(true),
  pgBoss(false),
  pgBoss(true),
  bull('postgres'),
  bull('redis'),
  plainjob(undefined),
  plainjob(10),
];
