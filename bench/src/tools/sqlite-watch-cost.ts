/**
 * What SQLite's wake-up watch (src/storage/sqlite/wakeups.ts) costs a drain: every commit of
 * the drain fires the watch in the draining process itself. Drains `n` no-op jobs in one
 * process, alternating runs with the watch (the default) and without it (`subscribe` removed),
 * and prints the median (min–max) jobs/s of each.
 *   BENCH_LEASEHOLD_SRC=$PWD/../src/index.ts node --import tsx src/tools/sqlite-watch-cost.ts [n] [concurrency] [runs]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';

const lh = (await import(process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js')) as typeof import('../../../src/index.ts');
process.env.LEASEHOLD_LOG_LEVEL ??= 'silent';
const [nArg = '20000', cArg = '10', runsArg = '5'] = process.argv.slice(2);
const n = Number(nArg);

async function drain(watch: boolean): Promise<number> {
  const dir = mkdtempSync(join(os.tmpdir(), 'lh-watch-'));
  try {
    const storage = await lh.openStorage(`sqlite:${join(dir, 'w.db')}`);
    await storage.migrate();
    if (!watch) Object.assign(storage, { subscribe: undefined });
    let done = 0;
    let finished: () => void = () => {};
    const all = new Promise<void>((r) => (finished = r));
    const noop = lh.defineJob({ type: 'noop', handler: () => {
      if (++done === n) finished();
    } });
    const client = lh.createClient({ storage, jobs: [noop] });
    for (let i = 0; i < n; i += 1_000) await client.enqueueMany(Array.from({ length: Math.min(1_000, n - i) }, () => ({ type: 'noop' as const, payload: {} })));
    const w = new lh.Worker({ storage, jobs: [noop], concurrency: Number(cArg) });
    const t = performance.now();
    await w.start();
    await all;
    const rate = n / ((performance.now() - t) / 1000);
    await w.stop({ deadlineMs: 5_000 });
    await storage.close();
    return rate;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const rates: Record<'watch' | 'none', number[]> = { watch: [], none: [] };
for (let r = 0; r < Number(runsArg); r++) {
  rates.none.push(await drain(false));
  rates.watch.push(await drain(true));
}
const show = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${s[Math.floor(s.length / 2)]!.toFixed(0)} (${s[0]!.toFixed(0)}–${s.at(-1)!.toFixed(0)})`;
};
console.log(`sqlite drain of ${n} no-op jobs, c=${cArg}, one process, ${runsArg} runs each: with the watch ${show(rates.watch)} jobs/s; without ${show(rates.none)} jobs/s`);
