/**
 * What an index on jobs (type, id) costs the hot paths: two storages on one database, alike but
 * for that index, take turns (order alternating) enqueueing a block of jobs in runs of 100 and
 * draining it (claim 100, finish 100); prints each round's times and the median of B ÷ A.
 *
 *   node --import tsx src/tools/ab-type-index.ts sqlite|postgres|mysql [rounds] [jobs]
 */
import type { NewJob, Storage } from '../../../src/core/storage.ts';
import { type IndexDb, openFresh, runIndexAb } from './index-ab.ts';

const [db = 'sqlite', roundsArg = '10', jobsArg = '5000'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const n = Number(jobsArg);
process.env.BENCH_SQLITE_DIR ??= '/tmp/leasehold-dashboard';

const TYPE_INDEX: Record<IndexDb, string> = {
  postgres: 'CREATE INDEX jobs_type_idx ON {s}.jobs (type, id)',
  mysql: 'CREATE INDEX leasehold_jobs_type ON leasehold_jobs (type, id)',
  sqlite: 'CREATE INDEX leasehold_jobs_type_idx ON leasehold_jobs (type, id)',
};
const open = (name: string, indexed: boolean): Promise<Storage> => openFresh(db as IndexDb, name, indexed ? TYPE_INDEX : undefined);

const job = (i: number): NewJob => ({ queue: 'default', type: `t${i % 8}`, payload: { i, note: 'hello world' }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 });
const types = Array.from({ length: 8 }, (_, i) => `t${i}`);

await runIndexAb({
  a: await open('ab_plain', false),
  b: await open('ab_typeidx', true),
  rounds, n, job, types,
  legend: 'A without, B with the index',
  title: db,
  detail: '',
});
