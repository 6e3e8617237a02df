/** Bytes allocated per function (self, top N) of a sampled heap profile (ALLOC_OUT): node --import tsx summarize-allocations.ts FILE [N] [jobs] */
import { readFileSync } from 'node:fs';

interface Node { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children?: Node[] }
const [file, nArg = '30', jobsArg] = process.argv.slice(2);
const head = (JSON.parse(readFileSync(file as string, 'utf8')) as { head: Node }).head;
const byFn = new Map<string, number>();
const walk = (n: Node): void => {
  const f = n.callFrame;
  const url = f.url.replace(/^file:\/\//, '').replace(/.*node_modules\//, 'nm/').replace(/.*\/work\/main\//, '');
  const key = `${f.functionName || '(anon)'} ${url}:${f.lineNumber + 1}`;
  byFn.set(key, (byFn.get(key) ?? 0) + n.selfSize);
  for (const c of n.children ?? []) walk(c);
};
walk(head);
const total = [...byFn.values()].reduce((a, b) => a + b, 0);
const jobs = jobsArg ? Number(jobsArg) : null;
const per = (b: number): string => (jobs ? `${(b / jobs).toFixed(0).padStart(6)} B/job` : '');
console.log(`total ${(total / 1e6).toFixed(1)} MB ${per(total)}`);
for (const [k, v] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, Number(nArg))) {
  console.log(`${((100 * v) / total).toFixed(1).padStart(5)}%  ${(v / 1e6).toFixed(2).padStart(7)} MB ${per(v)}  ${k}`);
}
