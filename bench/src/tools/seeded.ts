/**
 * What the storage tools start from: leasehold's benchmark tables for `db`, reset and holding
 * `n` queued no-op jobs (enqueued in bulk, as the harness does), and a storage opened on them
 * from the copy of the library under test (`BENCH_LEASEHOLD_SRC`, else ../dist).
 */
import { join } from 'node:path';
import { MYSQL_URL, PG_URL, sqliteDir } from '../common.ts';
import type { Db } from '../common.ts';
import { findSystem } from '../systems/index.ts';

export const lh = (await import(process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js')) as typeof import('../../../src/index.ts');

/** The URL the harness's leasehold system uses for `db`. */
export function leaseholdUrl(db: string): string {
  if (db === 'postgres') return `${PG_URL}?schema=bench_leasehold`;
  if (db === 'mysql') return `${MYSQL_URL}/bench_leasehold`;
  return `sqlite:${join(sqliteDir(), 'leasehold.db')}`;
}

/** Reset the tables, enqueue `n` no-op jobs, open a storage on them; `cleanup` drops the tables. */
export async function seededStorage(db: Db | string, n: number) {
  const sys = findSystem(`leasehold-${db}`);
  await sys.reset();
  const p = await sys.producer();
  const items = Array.from({ length: n }, (_, i) => ({ i }));
  for (let i = 0; i < n; i += 1000) await p.enqueueBulk(items.slice(i, i + 1000));
  await p.close();
  const storage = await lh.openStorage(leaseholdUrl(db));
  return { storage, cleanup: () => sys.cleanup() };
}
