/**
 * What the batch members' index (jobs_batch_idx on PostgreSQL and SQLite, partial; the key
 * jobs_batch on MySQL, on every row) costs jobs that are in no batch: two storages on one
 * database, alike but for that index (A has it dropped), take turns (order alternating)
 * enqueueing a block of jobs in runs of 100 and draining it; prints each round's times and the
 * median of B ÷ A.
 *
 *   node --import tsx src/tools/ab-batch-index.ts sqlite|postgres|mysql [rounds] [jobs]
 */
import type { NewJob, Storage } from '../../../src/core/storage.ts';
import { type IndexDb, openFresh, runIndexAb } from './index-ab.ts';

const [db = 'sqlite', roundsArg = '10', jobsArg = '5000'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const n = Number(jobsArg);
process.env.BENCH_SQLITE_DIR ??= '/tmp/leasehold-batch-index';

const DROP_BATCH_INDEX: Record<IndexDb, string> = {
  postgres: 'DROP INDEX {s}.jobs_batch_idx',
  mysql: 'ALTER TABLE leasehold_jobs DROP INDEX leasehold_jobs_batch',
  sqlite: 'DROP INDEX leasehold_jobs_batch_idx',
};
const open = (name: string, indexed: boolean): Promise<Storage> => openFresh(db as IndexDb, name, !indexed ? DROP_BATCH_INDEX : undefined);

const job = (i: number): NewJob => ({ queue: 'default', type: `t${i % 8}`, payload: { i, note: 'hello world' }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 });
const types = Array.from({ length: 8 }, (_, i) => `t${i}`);

await runIndexAb({
  a: await open('ab_nobatchidx', false),
  b: await open('ab_batchidx', true),
  rounds, n, job, types,
  legend: 'A without, B with the batch index',
  title: db,
  detail: ', no job in a batch',
});
