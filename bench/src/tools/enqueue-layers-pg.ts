/**
 * Where a one-job enqueue's time goes, layer by layer, on PostgreSQL (interleaved rounds):
 *   node --import tsx src/tools/enqueue-layers-pg.ts [jobs per variant]
 * client.enqueue() → storage.insertJobs() → the pool's query of the same statement → a
 * dedicated connection's query of it. Each layer's extra time is what it adds.
 */
import pg from 'pg';
import { insertSql } from '../../../src/storage/postgres/insert.ts';
import { PG_URL } from '../common.ts';

const lh = (await import(process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js')) as typeof import('../../../src/index.ts');
const n = Number(process.argv[2] ?? 2000);
const schema = 'bench_enqueue_layers';
const storage = await lh.openStorage(`${PG_URL}?schema=${schema}`);
await storage.migrate();
const client = lh.createClient({ storage });
const sql = insertSql(`"${schema}"`);
const pool = new pg.Pool({ connectionString: PG_URL, max: 10 });
const c = new pg.Client({ connectionString: PG_URL });
await c.connect();
const args = ['default', 'noop', '{"i":1}', 0, null, 0, 5, 300000, 3600000, 'leasehold', schema, null, null];
const job = { queue: 'default', type: 'noop', payload: { i: 1 }, priority: 0, runAt: null, runAfterMs: 0, maxAttempts: 5, idempotencyKey: null, timeoutMs: 300000, maxRuntimeMs: 3600000 };
const variants: [string, () => Promise<unknown>][] = [
  ['client.enqueue()', () => client.enqueue('noop', { i: 1 })],
  ['storage.insertJobs([one])', () => storage.jobs.insert({ jobs: [job as never] })],
  ['pool.query(insertOne)', () => pool.query({ name: 'one', text: sql.insertOne, values: args })],
  ['connection.query(insertOne)', () => c.query({ name: 'one', text: sql.insertOne, values: args })],
];
const times = new Map<string, number>();
for (let round = 0; round < 10; round++) {
  for (const [name, fn] of variants) {
    const t = performance.now();
    for (let i = 0; i < n / 10; i++) await fn();
    times.set(name, (times.get(name) ?? 0) + performance.now() - t);
  }
}
for (const [name, ms] of times) console.log(`${name.padEnd(30)} ${((1000 * ms) / n).toFixed(0)} µs/job`);
await c.query(`DROP SCHEMA ${schema} CASCADE`);
await c.end();
await pool.end();
await storage.close();
process.exit(0);
