/** Self time per function (top N) and per file of a .cpuprofile: node --import tsx summarize-profile.ts FILE [N] */
import { readFileSync } from 'node:fs';

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number; children?: number[] }
const [file, nArg = '25'] = process.argv.slice(2);
const prof = JSON.parse(readFileSync(file as string, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const self = new Map<number, number>();
prof.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const byFn = new Map<string, number>();
const byFile = new Map<string, number>();
for (const n of prof.nodes) {
  const t = self.get(n.id) ?? 0;
  const url = n.callFrame.url.replace(/^file:\/\//, '').replace(/.*node_modules\//, 'nm/').replace(/.*\/work\/main\//, '');
  const fn = `${n.callFrame.functionName || '(anon)'} ${url}:${n.callFrame.lineNumber + 1}`;
  byFn.set(fn, (byFn.get(fn) ?? 0) + t);
  const f = url.startsWith('nm/') ? url.split('/').slice(0, url.split('/')[1]?.startsWith('@') ? 3 : 2).join('/') : url || `(${n.callFrame.functionName})`;
  byFile.set(f, (byFile.get(f) ?? 0) + t);
}
const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(nArg)).map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}`).join('\n');
console.log(`total sampled ${(total / 1000).toFixed(0)} ms\n-- by file/package --\n${top(byFile)}\n-- by function --\n${top(byFn)}`);
