/**
 * A/B of leasehold builds on one drain, alternated run by run so that the machine's drift hits
 * every variant alike (on this shared 2-core machine one run says little):
 *   node --import tsx src/tools/ab-drain.ts postgres 40000 10 6 /path/a /path/b …
 * Each variant is a copy of the library (a directory holding `dist/`, e.g. made with
 * `cp -r ../dist results/v/a/dist && cp ../package.json results/v/a/`); each run is one
 * profile-drain.ts process. Prints the median, min and max of jobs/s and of the worker's and
 * the database server's CPU per job.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const [db = 'postgres', n = '40000', c = '10', repsArg = '5', ...variants] = process.argv.slice(2);
if (variants.length === 0) {
  console.error('usage: ab-drain.ts db n concurrency repeats variant-dir…');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const entry = (v: string): string => {
  const p = resolve(v, 'dist', 'index.js');
  if (!existsSync(p)) throw new Error(`${v}: no dist/index.js`);
  return p;
};
interface Run { jobsPerS: number; usPerJob: { worker: number; server: number } }
const runs = new Map<string, Run[]>(variants.map((v) => [v, []]));
for (let r = 0; r < Number(repsArg); r++) {
  for (const v of variants) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', join(here, 'profile-drain.ts'), db, n, c], {
      env: { ...process.env, BENCH_LEASEHOLD_SRC: entry(v) },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = out.trim().split('\n').find((l) => l.startsWith('{'));
    if (!line) throw new Error(`${v}: no result line in\n${out}`);
    runs.get(v)?.push(JSON.parse(line) as Run);
  }
}
const stats = (xs: number[]): string => {
  const s = [...xs].sort((a, b) => a - b);
  return `${s[Math.floor((s.length - 1) / 2)]} (${s[0]}–${s[s.length - 1]})`;
};
for (const [v, rs] of runs) {
  console.log(
    `${v}: jobs/s ${stats(rs.map((r) => r.jobsPerS))}; µs/job worker ${stats(rs.map((r) => r.usPerJob.worker))}, server ${stats(rs.map((r) => r.usPerJob.server))}`,
  );
}
