/**
 * The dashboard's read queries at a million jobs: fills a database with dashboard-seed.ts (or
 * reuses the last fill with --reuse), then times each search, count, summary and chart call
 * through the storage (median and p95 over --runs runs after two warm-ups).
 *
 *   node --import tsx src/tools/dashboard-queries.ts sqlite|postgres|mysql [--scale 1] [--runs 20] [--reuse] [--only name,name]
 */
import type { Storage } from '../../../src/core/storage.ts';
import { CHART_RANGES, chartOf } from '../../../src/core/charts.ts';
import { openStorage } from '../../../src/storage/open.ts';
import { MILLION, dashboardArgs, dashboardUrl, seedDashboard } from './dashboard-seed.ts';

const { values, db, k } = dashboardArgs();

/** What the dashboard asks, by name. */
const QUERIES: Record<string, (s: Storage) => Promise<unknown>> = {
  'search: newest': (s) => s.jobs.search({ limit: 50 }),
  'search: status dead': (s) => s.jobs.search({ filter: { status: 'dead' }, limit: 50 }),
  'search: status failed': (s) => s.jobs.search({ filter: { status: 'failed' }, limit: 50 }),
  'search: status succeeded, older page': (s) => s.jobs.search({ filter: { status: 'succeeded' }, beforeId: String(Math.round(450_000 * k)), limit: 50 }),
  'search: type (common)': (s) => s.jobs.search({ filter: { type: 'report.build' }, limit: 50 }),
  'search: type (rare, 1 in 20,000)': (s) => s.jobs.search({ filter: { type: 'ledger.rebuild' }, limit: 50 }),
  'search: type prefix (rare)': (s) => s.jobs.search({ filter: { typePrefix: 'ledger.' }, limit: 50 }),
  'search: dead of one type': (s) => s.jobs.search({ filter: { status: 'dead', type: 'email.send' }, limit: 50 }),
  'search: id': (s) => s.jobs.search({ filter: { id: String(Math.round(500_000 * k)) }, limit: 50 }),
  'search: idempotency key': (s) => s.jobs.search({ filter: { idempotencyKey: `order-${Math.round(500_000 * k)}` }, limit: 50 }),
  'search: idempotency key prefix': (s) => s.jobs.search({ filter: { idempotencyKeyPrefix: 'order-12345' }, limit: 50 }),
  'search: schedule name': (s) => s.jobs.search({ filter: { scheduleName: 'nightly-report' }, limit: 50 }),
  'search: text in newest payloads': (s) => s.jobs.search({ filter: { text: 'ORD-99' }, limit: 50 }),
  'search: text matching nothing (full window)': (s) => s.jobs.search({ filter: { text: 'no such text' }, limit: 50 }),
  'search: dead with error text': (s) => s.jobs.search({ filter: { status: 'dead', text: 'upstream 503' }, limit: 50 }),
  'count: all (cap 10,000)': (s) => s.jobs.countMatching({ cap: 10_000 }),
  'count: type (common)': (s) => s.jobs.countMatching({ filter: { type: 'email.send' }, cap: 10_000 }),
  'count: type (rare)': (s) => s.jobs.countMatching({ filter: { type: 'ledger.rebuild' }, cap: 10_000 }),
  'count: status dead': (s) => s.jobs.countMatching({ filter: { status: 'dead' }, cap: 10_000 }),
  'count: text': (s) => s.jobs.countMatching({ filter: { text: 'timeout' }, cap: 10_000 }),
  'summary (cap 10,000)': (s) => s.queues.summary({ cap: 10_000 }),
  'summary (cap 100,000)': (s) => s.queues.summary({ cap: 100_000 }),
  'chart: hour': async (s) => chartOf(await s.attempts.series(CHART_RANGES.hour)),
  'chart: day': async (s) => chartOf(await s.attempts.series(CHART_RANGES.day)),
  'chart: week': async (s) => chartOf(await s.attempts.series(CHART_RANGES.week)),
  'before: queues.counts (whole table)': (s) => s.queues.counts(),
  'before: queues.health': (s) => s.queues.health(),
};

const t0 = performance.now();
const shape = { succeeded: MILLION.succeeded * k, dead: MILLION.dead * k, cancelled: MILLION.cancelled * k, due: MILLION.due * k };
const storage = values.reuse ? await openStorage(dashboardUrl(db)) : await seedDashboard(db, shape);
if (!values.reuse) console.log(`${db}: filled ${Object.values(shape).reduce((a, b) => a + b)} jobs in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const only = values.only?.split(',');
// the first chart of a freshly filled database counts every closed slot of the week once
if (!only || only.some((o) => 'chart'.includes(o))) {
  const start = performance.now();
  await storage.attempts.series(CHART_RANGES.week);
  console.log(`first week chart (counts the week's closed slots into attempt_rollups): ${(performance.now() - start).toFixed(0)} ms`);
}
const runs = Number(values.runs);
const ms = (x: number): string => x.toFixed(x < 10 ? 2 : 1);
console.log(`| ${db} | median ms | p95 ms | max ms |\n|---|---:|---:|---:|`);
for (const [name, q] of Object.entries(QUERIES)) {
  if (only && !only.some((o) => name.includes(o))) continue;
  for (let i = 0; i < 2; i++) await q(storage);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await q(storage);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const at = (p: number): number => times[Math.min(times.length - 1, Math.ceil(p * times.length) - 1)]!;
  console.log(`| ${name} | ${ms(at(0.5))} | ${ms(at(0.95))} | ${ms(times[times.length - 1]!)} |`);
}
await storage.close();
