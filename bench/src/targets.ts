/**
 * The issue's targets (ratios measured in one run), checked against a results file:
 *   node --import tsx src/targets.ts results/<file>.json
 * main.ts prints the same table at the end of a run.
 */
import { readFileSync } from 'node:fs';
import { fmt } from './common.ts';

interface R { db: string; system: string; metric: string; median: number }

const M = {
  bulk: 'enqueue, bulk API (1,000/call)',
  single: 'enqueue, one job per call',
  drains: ['drain, 1 process c=10', 'drain, 1 process c=50', 'drain, 2 processes c=10'],
  p50: 'idle latency p50',
  p99: 'idle latency p99',
  spikeEmpty: 'spike: drain 100k due, empty table',
  spikeFull: 'spike: drain 100k due + 1M finished rows',
};

export function targetsTable(results: R[]): string {
  const get = (db: string, system: string, metric: string) => results.find((r) => r.db === db && r.system === system && r.metric === metric)?.median;
  const rows: string[] = ['| target | workload | measured | goal | met |', '|---|---|---:|---:|---|'];
  const check = (target: string, workload: string, a: number | undefined, b: number | undefined, goal: number, lowerIsBetter = false) => {
    if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b)) return;
    const ratio = a / b;
    const met = lowerIsBetter ? ratio <= goal : ratio >= goal;
    rows.push(`| ${target} | ${workload} | ${fmt(ratio)}× | ${lowerIsBetter ? '≤' : '≥'} ${goal}× | ${met ? 'yes' : `**no** (${lowerIsBetter ? `${fmt(ratio / goal)}× over` : `${Math.round((1 - ratio / goal) * 100)} % short`})`} |`);
  };
  for (const d of M.drains) {
    check('PG drain ÷ graphile-worker (localQueue + batched)', d, get('postgres', 'leasehold-postgres', d), get('postgres', 'graphile-batched', d), 1.3);
    check('PG drain ÷ pg-boss tuned', d, get('postgres', 'leasehold-postgres', d), get('postgres', 'pgboss-tuned', d), 3);
  }
  check('PG drain ÷ raw 100-row loop', M.drains[0] as string, get('postgres', 'leasehold-postgres', M.drains[0] as string), get('postgres', 'raw-pg-100', M.drains[0] as string), 0.75);
  check('PG idle latency p50 ÷ graphile-worker', 'latency', get('postgres', 'leasehold-postgres', M.p50), get('postgres', 'graphile', M.p50), 1, true);
  check('PG idle latency p99 ÷ graphile-worker', 'latency', get('postgres', 'leasehold-postgres', M.p99), get('postgres', 'graphile', M.p99), 1, true);
  for (const db of ['postgres', 'sqlite', 'mysql']) {
    check(`${db} single enqueue ÷ raw one-row INSERT`, M.single, get(db, `leasehold-${db}`, M.single), get(db, `raw-${db === 'postgres' ? 'pg' : db}-1`, M.single), 0.9);
    check(`${db} bulk enqueue ÷ raw multi-row INSERT`, M.bulk, get(db, `leasehold-${db}`, M.bulk), get(db, `raw-${db === 'postgres' ? 'pg' : db}-1`, M.bulk), 0.5);
  }
  for (const d of M.drains) check('SQLite drain ÷ plainjob', d, get('sqlite', 'leasehold-sqlite', d), get('sqlite', 'plainjob', d), 3);
  check('MariaDB drain ÷ raw 100-row loop', M.drains[0] as string, get('mysql', 'leasehold-mysql', M.drains[0] as string), get('mysql', 'raw-mysql-100', M.drains[0] as string), 0.75);
  for (const db of ['postgres', 'sqlite', 'mysql']) {
    check(`${db}: drain with 1M finished rows ÷ empty table`, 'spike', get(db, `leasehold-${db}`, M.spikeFull), get(db, `leasehold-${db}`, M.spikeEmpty), 0.8);
  }
  return rows.join('\n');
}

if (process.argv[1]?.endsWith('targets.ts')) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: targets.ts results/<file>.json');
  console.log(targetsTable((JSON.parse(readFileSync(file, 'utf8')) as { results: R[] }).results));
}
