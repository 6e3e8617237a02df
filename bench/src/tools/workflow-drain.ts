/**
 * Workflows against the same jobs without them, and against BullMQ flows on Redis, in one run:
 *   node --import tsx src/tools/workflow-drain.ts <postgres|sqlite|mysql> [chains=100] [fanout=1000] [c=10] [repeats=3]
 * chain: `chains` workflows of a 10-job chain (each job after the one before), drained by one
 * worker of concurrency c, against 10 × `chains` plain jobs. fan-out: one batch of `fanout`
 * members whose callback runs after the last, against `fanout` plain jobs. BullMQ: the chain as a
 * FlowProducer tree 10 deep (a parent runs after its child), the fan-out as one parent with
 * `fanout` children. Each case on a fresh schema (bench_h25_wf) or key prefix; enqueue not timed.
 * Prints jobs/s per case, median (min–max), and each case's ratio to its plain jobs.
 * BENCH_POLL_MS sets leasehold's worker poll interval (default the worker's own).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { FlowProducer, Queue, Worker as BullWorker } from 'bullmq';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { MYSQL_URL, PG_URL, REDIS, sqliteDir, stats } from '../common.ts';

const lh = (await import(process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js')) as typeof import('../../../src/index.ts');
type LhClient = import('../../../src/index.ts').Client;
process.env.LEASEHOLD_LOG_LEVEL ??= 'silent';
const [db = 'postgres', chainsArg = '100', fanoutArg = '1000', cArg = '10', repsArg = '3'] = process.argv.slice(2);
const CHAINS = Number(chainsArg);
const FANOUT = Number(fanoutArg);
const C = Number(cArg);
const LEN = 10;
const SCHEMA = 'bench_h25_wf';
const PREFIX = 'leasehold-bench-h25';
const sqliteFile = join(sqliteDir(), 'h25-workflows.db');

async function freshLeasehold() {
  if (db === 'postgres') {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
    await c.end();
  } else if (db === 'mysql') {
    const c = await mysql.createConnection({ uri: MYSQL_URL });
    await c.query(`DROP DATABASE IF EXISTS ${SCHEMA}`);
    await c.query(`CREATE DATABASE ${SCHEMA}`);
    await c.end();
  } else for (const f of [sqliteFile, `${sqliteFile}-wal`, `${sqliteFile}-shm`]) rmSync(f, { force: true });
  const url = db === 'postgres' ? `${PG_URL}?schema=${SCHEMA}` : db === 'mysql' ? `${MYSQL_URL}/${SCHEMA}` : `sqlite:${sqliteFile}`;
  const storage = await lh.openStorage(url);
  await storage.migrate();
  return storage;
}

/** One leasehold case: `enqueue` on a fresh database, then a worker runs until `expected` handler calls; jobs/s over `jobs`. */
async function leasehold(enqueue: (client: LhClient) => Promise<void>, expected: number, jobs: number): Promise<number> {
  const storage = await freshLeasehold();
  let calls = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const count = () => void (++calls === expected && done());
  const defs = [lh.defineJob({ type: 'step', handler: count }), lh.defineJob({ type: 'done', handler: count })];
  await enqueue(lh.createClient({ storage, jobs: defs }));
  const t0 = performance.now();
  const w = new lh.Worker({ storage, jobs: defs, concurrency: C, ...(process.env.BENCH_POLL_MS ? { pollIntervalMs: Number(process.env.BENCH_POLL_MS) } : {}) });
  await w.start();
  await all;
  const ms = performance.now() - t0;
  await w.stop();
  await storage.close();
  return Math.round(jobs / (ms / 1000));
}

const chain = (client: LhClient) => (async () => {
  for (let f = 0; f < CHAINS; f++) {
    await client.enqueueFlow(Array.from({ length: LEN }, (_, i) => ({ key: `s${i}`, type: 'step' as const, payload: { f, i }, dependsOn: i === 0 ? [] : [`s${i - 1}`] })));
  }
})();
const plain = (n: number) => async (client: LhClient) => {
  for (let i = 0; i < n; i += 1000) await client.enqueueMany(Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({ type: 'step' as const, payload: { k: i + k } })));
};
const fanout = async (client: LhClient) => {
  const b = await client.batches.create({ onComplete: { type: 'done', payload: {} } });
  for (let i = 0; i < FANOUT; i += 1000) await client.batches.add(b.id, Array.from({ length: Math.min(1000, FANOUT - i) }, (_, k) => ({ type: 'step' as const, payload: { k: i + k } })));
  await client.batches.close(b.id);
};

async function dropRedis(): Promise<void> {
  const r = new Redis(REDIS);
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${PREFIX}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await r.del(...keys);
  } while (cursor !== '0');
  await r.quit();
}

/** One BullMQ case on Redis: `enqueue`, then a worker of concurrency C until `expected` jobs ran. */
async function bullmq(enqueue: (flow: FlowProducer, queue: Queue) => Promise<void>, expected: number, jobs: number): Promise<number> {
  await dropRedis();
  const connection = { ...REDIS, maxRetriesPerRequest: null };
  const flow = new FlowProducer({ connection, prefix: PREFIX });
  const queue = new Queue('wf', { connection, prefix: PREFIX });
  await enqueue(flow, queue);
  let calls = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const t0 = performance.now();
  const w = new BullWorker('wf', async () => void (++calls === expected && done()), { connection, prefix: PREFIX, concurrency: C });
  w.on('error', () => {});
  await all;
  const ms = performance.now() - t0;
  await w.close();
  await flow.close();
  await queue.close();
  return Math.round(jobs / (ms / 1000));
}

type Node = { name: string; queueName: string; data: unknown; children?: Node[] };
const bullChain = async (flow: FlowProducer) => {
  for (let f = 0; f < CHAINS; f++) {
    let node: Node | undefined;
    // the last step is the root: BullMQ runs a parent after its children
    for (let i = 0; i < LEN; i++) node = { name: 'step', queueName: 'wf', data: { f, i }, ...(node ? { children: [node] } : {}) };
    await flow.add(node!);
  }
};
const bullPlain = (n: number) => async (_: FlowProducer, q: Queue) => {
  for (let i = 0; i < n; i += 1000) await q.addBulk(Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({ name: 'step', data: { k: i + k } })));
};
const bullFanout = async (flow: FlowProducer) => {
  await flow.add({ name: 'done', queueName: 'wf', data: {}, children: Array.from({ length: FANOUT }, (_, k) => ({ name: 'step', queueName: 'wf', data: { k } })) });
};

const cases: [string, () => Promise<number>][] = [
  [`leasehold ${db}: ${LEN}-job chains ×${CHAINS}`, () => leasehold(chain, CHAINS * LEN, CHAINS * LEN)],
  [`leasehold ${db}: the same jobs, no dependencies`, () => leasehold(plain(CHAINS * LEN), CHAINS * LEN, CHAINS * LEN)],
  [`leasehold ${db}: fan-out of ${FANOUT} + batch callback`, () => leasehold(fanout, FANOUT + 1, FANOUT + 1)],
  [`leasehold ${db}: ${FANOUT} jobs, no batch`, () => leasehold(plain(FANOUT), FANOUT, FANOUT)],
  [`BullMQ Redis: ${LEN}-deep flows ×${CHAINS}`, () => bullmq(bullChain, CHAINS * LEN, CHAINS * LEN)],
  [`BullMQ Redis: the same jobs, no flows`, () => bullmq(bullPlain(CHAINS * LEN), CHAINS * LEN, CHAINS * LEN)],
  [`BullMQ Redis: parent with ${FANOUT} children`, () => bullmq(bullFanout, FANOUT + 1, FANOUT + 1)],
  [`BullMQ Redis: ${FANOUT} jobs, no parent`, () => bullmq(bullPlain(FANOUT), FANOUT, FANOUT)],
];
const results = new Map<string, number[]>(cases.map(([k]) => [k, []]));
for (let r = 0; r < Number(repsArg); r++) for (const [k, run] of cases) results.get(k)!.push(await run());
const medians = [...results.values()].map((xs) => stats(xs).median);
[...results].forEach(([k, xs], i) => {
  const s = stats(xs);
  const base = i % 2 === 0 ? ` (${(s.median / medians[i + 1]!).toFixed(2)}× the plain jobs)` : '';
  console.log(`${k}: ${s.median} jobs/s (${s.min}–${s.max})${base}`);
});
await dropRedis();
