#!/usr/bin/env node
// Runs every *.test.ts under src/, test/ and examples/ with node's test runner (through tsx), then says
// loudly which database suites were skipped and why. Extra args are passed to node --test.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const filter = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const passthrough = process.argv.slice(2).filter((a) => a.startsWith('--'));

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.ts')) out.push(path.relative(root, p));
  }
  return out;
}
let files = ['src', 'test', 'examples'].flatMap((d) => walk(path.join(root, d), [])).sort();
if (filter.length) files = files.filter((f) => filter.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

console.log(`node ${process.version}: ${files.length} test file(s)`);
const reportDir = mkdtempSync(path.join(tmpdir(), 'leasehold-skips-'));
const report = path.join(reportDir, 'skipped.txt');
// spec, which names the failing tests again at the end of the log (Node 22 writes TAP to a pipe,
// and CI shows only the log's tail), unless a reporter was chosen
const chosen = [...passthrough, process.env.NODE_OPTIONS ?? ''].some((a) => a.includes('--test-reporter'));
const res = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=300000', ...(chosen ? [] : ['--test-reporter=spec']), ...passthrough, ...files],
  { cwd: root, stdio: 'inherit', env: { ...process.env, LEASEHOLD_SKIP_REPORT: report } },
);
if (existsSync(report)) {
  const lines = [...new Set(readFileSync(report, 'utf8').trim().split('\n').filter(Boolean))];
  if (lines.length) {
    console.error('\n' + '!'.repeat(78));
    console.error(`!!! ${lines.length} database suite(s) were SKIPPED — this run did not test them:`);
    for (const l of lines) console.error(`!!!   ${l}`);
    console.error('!'.repeat(78) + '\n');
  }
}
rmSync(reportDir, { recursive: true, force: true });
process.exit(res.status ?? 1);
