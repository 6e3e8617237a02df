/**
 * What MariaDB's wake-ups (src/storage/mysql/wakeups.ts) cost an enqueuer: one-at-a-time
 * enqueues of `n` due jobs, alternating runs with a parked subscriber on the same database (each
 * enqueue then sends a KILL QUERY after its commit) and without one; median (min–max) jobs/s.
 *   BENCH_LEASEHOLD_SRC=$PWD/../src/index.ts node --import tsx src/tools/mysql-wake-enqueue-cost.ts [n] [runs]
 */
export {};

const lh = (await import(process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js')) as typeof import('../../../src/index.ts');
const mysql = (await import('mysql2/promise')).default;
const URL = process.env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';
const [nArg = '2000', runsArg = '5'] = process.argv.slice(2);
const n = Number(nArg);

const admin = await mysql.createConnection(URL);
await admin.query('DROP DATABASE IF EXISTS leasehold_bench_wake_cost');
await admin.query('CREATE DATABASE leasehold_bench_wake_cost');
const url = `${URL}/leasehold_bench_wake_cost`;
const noop = lh.defineJob({ type: 'noop', handler: () => {} });

async function run(parked: boolean): Promise<number> {
  const worker = await lh.openStorage(url);
  const storage = await lh.openStorage(url);
  await storage.migrate();
  const unsubscribe = parked ? await worker.subscribe!({ onWake: () => {} }) : async () => {};
  const client = lh.createClient({ storage, jobs: [noop] });
  const t = performance.now();
  for (let i = 0; i < n; i++) await client.enqueue('noop', {});
  const rate = n / ((performance.now() - t) / 1000);
  await unsubscribe();
  await storage.close();
  await worker.close();
  return rate;
}

const rates: Record<'parked' | 'none', number[]> = { parked: [], none: [] };
for (let r = 0; r < Number(runsArg); r++) {
  rates.none.push(await run(false));
  rates.parked.push(await run(true));
}
await admin.query('DROP DATABASE leasehold_bench_wake_cost');
await admin.end();
const show = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${s[Math.floor(s.length / 2)]!.toFixed(0)} (${s[0]!.toFixed(0)}–${s.at(-1)!.toFixed(0)})`;
};
console.log(`mysql: ${n} one-at-a-time enqueues, ${runsArg} runs each: with a parked subscriber ${show(rates.parked)} jobs/s; without ${show(rates.none)} jobs/s`);
