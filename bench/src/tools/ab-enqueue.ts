/**
 * Enqueue rates of several systems side by side in one process, alternated block by block so
 * that the disk's drift (a one-job enqueue is one commit) hits every system alike:
 *   node --import tsx src/tools/ab-enqueue.ts single 300 15 raw-mysql-1 leasehold-mysql
 * Blocks of `n` jobs (single: one call per job; bulk: calls of 1,000), `blocks` rounds, the
 * first round a warm-up. Prints each system's median (min–max) jobs/s and, per round, its rate
 * ÷ the first system's (median, min–max). BENCH_LEASEHOLD_SRC picks the leasehold build.
 */
import type { Producer } from '../common.ts';
import { findSystem } from '../systems/index.ts';

const [mode = 'single', nArg = '300', blocksArg = '15', ...ids] = process.argv.slice(2);
if (ids.length === 0 || (mode !== 'single' && mode !== 'bulk')) {
  console.error('usage: ab-enqueue.ts single|bulk jobs-per-block blocks system-id…');
  process.exit(2);
}
const n = Number(nArg);
const systems = ids.map((id) => findSystem(id));
const producers: Producer[] = [];
for (const s of systems) {
  await s.reset();
  producers.push(await s.producer());
}
const items = Array.from({ length: n }, (_, i) => ({ i }));

async function block(p: Producer): Promise<number> {
  const t0 = performance.now();
  if (mode === 'single') for (const x of items) await p.enqueueOne(x);
  else for (let i = 0; i < n; i += 1000) await p.enqueueBulk(items.slice(i, i + 1000));
  return n / ((performance.now() - t0) / 1000);
}

const rates: number[][] = systems.map(() => []);
for (let b = 0; b < Number(blocksArg); b++) {
  const round: number[] = [];
  for (const p of producers) round.push(await block(p));
  if (b > 0) round.forEach((r, k) => rates[k]!.push(r));
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const range = (xs: number[], f: (x: number) => string): string => `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
for (let k = 0; k < systems.length; k++) {
  const ratio = rates[k]!.map((r, b) => r / rates[0]![b]!);
  console.log(`${ids[k]!.padEnd(20)} ${range(rates[k]!, (x) => Math.round(x).toString())} jobs/s   ÷ ${ids[0]}: ${range(ratio, (x) => x.toFixed(2))}`);
}
for (const p of producers) await p.close();
for (const s of systems) await s.cleanup();
process.exit(0);
