/**
 * Where does a one-job enqueue on PostgreSQL spend its time? Times, on one connection and
 * interleaved: leasehold's client.enqueue(); its insert statements (with and without
 * idempotency keys) sent directly; a plain one-row INSERT into the same table.
 *   node --import tsx src/tools/single-insert-pg.ts [jobs per variant]
 */
import pg from 'pg';
import { insertSql } from '../../../src/storage/postgres/insert.ts';
import { PG_URL } from '../common.ts';
import { findSystem } from '../systems/index.ts';

const n = Number(process.argv[2] ?? 500);
const sys = findSystem('leasehold-postgres');
await sys.reset();
const prod = await sys.producer();
const sql = insertSql('"bench_leasehold"');
const c = new pg.Client({ connectionString: PG_URL });
await c.connect();
const args = (notify: boolean) => [['default'], ['noop'], ['{"i":1}'], [0], [null], [0], [5], [null], [300000], [3600000], notify ? 'leasehold' : null, 'bench_leasehold', [], [], []];
const plainArgs = [['default'], ['noop'], ['{"i":1}'], [0], [null], [0], [5], [300000], [3600000], 'leasehold', 'bench_leasehold', [], []];
const oneArgs = (runAt: Date | null) => ['default', 'noop', '{"i":1}', 0, runAt, 0, 5, 300000, 3600000, 'leasehold', 'bench_leasehold', null, null];
const variants: [string, () => Promise<unknown>][] = [
  ['client.enqueue() (leasehold API)', () => prod.enqueueOne({ i: 1 })],
  ['insert statement, direct', () => c.query({ name: 'ins', text: sql.insertKeyed, values: args(true) })],
  ['plain insert statement (no keys), direct', () => c.query({ name: 'ins2', text: sql.insertPlain, values: plainArgs })],
  ['one-job insert statement, direct', () => c.query({ name: 'one', text: sql.insertOne, values: oneArgs(null) })],
  ['one-job insert, not due (no NOTIFY)', () => c.query({ name: 'one', text: sql.insertOne, values: oneArgs(new Date(Date.now() + 3_600_000)) })],
  ['plain INSERT … RETURNING id', () => c.query({ name: 'plain', text: `INSERT INTO bench_leasehold.jobs (queue, type, payload, status, max_attempts, timeout_ms, max_runtime_ms) VALUES ('default','noop','{"i":1}','queued',5,300000,3600000) RETURNING id` })],
];
const times = new Map<string, number>();
for (let round = 0; round < 5; round++) {
  for (const [name, fn] of variants) {
    const t = performance.now();
    for (let i = 0; i < n / 5; i++) await fn();
    times.set(name, (times.get(name) ?? 0) + performance.now() - t);
  }
}
for (const [name, ms] of times) console.log(`${name.padEnd(36)} ${(ms / n).toFixed(2)} ms/job  ${Math.round(n / (ms / 1000))} jobs/s`);
await c.end();
await prod.close();
await sys.cleanup();
process.exit(0);
