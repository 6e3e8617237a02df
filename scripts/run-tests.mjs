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
// a second reporter writes the spec summary to a file, so a failure is named again at the very end of the log
const summary = path.join(reportDir, 'spec.txt');
const reporters = passthrough.some((a) => a.startsWith('--test-reporter'))
  ? []
  : ['--test-reporter=tap', '--test-reporter-destination=stdout', '--test-reporter=spec', `--test-reporter-destination=${summary}`];
const res = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=300000', ...reporters, ...passthrough, ...files],
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
if (res.status !== 0 && existsSync(summary)) {
  const spec = readFileSync(summary, 'utf8');
  const at = spec.indexOf('failing tests:');
  if (at >= 0) {
    const lines = spec.slice(at).split('\n');
    console.error('\n' + '='.repeat(78) + '\n✖ ' + lines.slice(0, 400).join('\n'));
    if (lines.length > 400) console.error(`… ${lines.length - 400} more line(s) in the TAP output above`);
  }
}
rmSync(reportDir, { recursive: true, force: true });
process.exit(res.status ?? 1);
