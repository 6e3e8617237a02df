/**
 * Every dashboard page and JSON endpoint's server time at a million jobs: fills a database with
 * dashboard-seed.ts (or reuses the last fill with --reuse), lets the sweeper's chart warm-up run
 * its passes (attempts.rollUp, 24 slots a pass, until none is left: as a worker's sweeper would
 * over its first half hour), then asks the dashboard in-process (the Hono app, no socket) for
 * each path and reads the whole body; median and p95 in ms over --runs runs after two warm-ups.
 *
 *   node --import tsx src/tools/dashboard-pages.ts sqlite|postgres|mysql [--scale 1] [--runs 20] [--reuse] [--only text]
 */
import { ROLLUP_SLOTS_PER_SWEEP } from '../../../src/core/chart-rollups.ts';
import { createDashboard } from '../../../src/dashboard/index.ts';
import { createClient } from '../../../src/runtime/client.ts';
import { withOperatorApi } from '../../../src/runtime/operator.ts';
import { openStorage } from '../../../src/storage/open.ts';
import { MILLION, dashboardArgs, dashboardUrl, seedDashboard } from './dashboard-seed.ts';

const { values, db, k } = dashboardArgs();

const t0 = performance.now();
const shape = { succeeded: MILLION.succeeded * k, dead: MILLION.dead * k, cancelled: MILLION.cancelled * k, due: MILLION.due * k };
const storage = values.reuse ? await openStorage(dashboardUrl(db)) : await seedDashboard(db, shape);
if (!values.reuse) console.log(`${db}: filled ${Object.values(shape).reduce((a, b) => a + b)} jobs in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

// the sweeper's warm-up, pass by pass: each pass is bounded work
const passes: number[] = [];
for (;;) {
  const start = performance.now();
  const counted = await storage.attempts.rollUp({ slots: ROLLUP_SLOTS_PER_SWEEP });
  passes.push(performance.now() - start);
  if (counted === 0) break;
}
passes.sort((a, b) => a - b);
console.log(`chart warm-up: ${passes.length} sweeper passes, median ${passes[Math.floor(passes.length / 2)]!.toFixed(0)} ms, longest ${passes[passes.length - 1]!.toFixed(0)} ms`);

const app = createDashboard({ client: withOperatorApi(createClient({ storage })), pollMs: 5_000 });
const dead = await storage.jobs.search({ filter: { status: 'dead' }, limit: 1 });
const deadId = dead.jobs[0]?.id ?? '1';
const mid = String(Math.round(450_000 * k));
const PATHS: [string, string][] = [
  ['overview', '/'],
  ['overview JSON', '/api/overview'],
  ['jobs', '/jobs'],
  ['jobs JSON (live refresh)', '/api/jobs'],
  ['jobs: dead', '/jobs?status=dead'],
  ['jobs: dead JSON', '/api/jobs?status=dead'],
  ['jobs: dead of one type', '/jobs?status=dead&type=email.send'],
  ['jobs: type prefix (rare)', '/jobs?type=ledger.*'],
  ['jobs: key prefix', '/jobs?key=order-12345*'],
  ['jobs: text', '/jobs?q=upstream+503'],
  ['jobs: older page', `/jobs?status=succeeded&before=${mid}`],
  ['jobs: a job id in the search', `/jobs?q=${mid}`],
  ['job', `/jobs/${deadId}`],
  ['job JSON', `/api/jobs/${deadId}`],
  ['bulk count JSON (retry dead)', '/api/bulk?action=retry&status=dead'],
  ['queues', '/queues'],
  ['queues JSON', '/api/queues'],
  ['schedules', '/schedules'],
  ['schedules JSON', '/api/schedules'],
  ['workers', '/workers'],
  ['workers JSON', '/api/workers'],
  ['locks', '/locks'],
  ['locks JSON', '/api/locks'],
  ['charts: hour', '/charts?range=hour'],
  ['charts: day', '/charts?range=day'],
  ['charts: week', '/charts?range=week'],
];

const runs = Number(values.runs);
const ms = (x: number): string => x.toFixed(x < 10 ? 2 : 1);
const only = values.only?.split(',');
console.log(`| ${db} | path | median ms | p95 ms | max ms |\n|---|---|---:|---:|---:|`);
for (const [name, path] of PATHS) {
  if (only && !only.some((o) => name.includes(o))) continue;
  const ask = async (): Promise<void> => {
    const res = await app.request(path, { headers: { host: 'localhost' } });
    await res.text();
    if (res.status >= 400) throw new Error(`${path}: ${res.status}`);
  };
  for (let i = 0; i < 2; i++) await ask();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await ask();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const at = (p: number): number => times[Math.min(times.length - 1, Math.ceil(p * times.length) - 1)]!;
  console.log(`| ${name} | \`${path}\` | ${ms(at(0.5))} | ${ms(at(0.95))} | ${ms(times[times.length - 1]!)} |`);
}
await storage.close();
