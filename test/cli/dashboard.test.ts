/**
 * `leasehold dashboard` as a process: with a token it answers only its allowed Host names
 * (--allowed-host), passes --poll to the pages, and its client carries the operator calls (the
 * schedules page offers Run now, the queues page counts throughput). SIGTERM stops it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT, cli, tempDb, withDb } from './support.js';
import { upsertSchedule } from '../../src/runtime/scheduler.js';

const TOKEN = 'cli-dashboard-token-0123456789';

/** GET with a chosen Host header (fetch cannot set one). */
function getAs(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host, authorization: `Bearer ${TOKEN}` } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const t = tempDb();
after(() => t.cleanup());
before(async () => {
  assert.equal((await cli(['--db', t.db, 'migrate'])).code, 0);
  await withDb(t.file, (s) => upsertSchedule(s, { name: 'hourly', cron: '0 * * * *', type: 'report', payload: {} }));
});

test('--allowed-host, --poll and the operator calls reach the served dashboard', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli/bin.ts'), '--db', t.db, 'dashboard', '--port', '0', '--host', '127.0.0.1', '--allowed-host', 'ops.example.com', '--poll', '1500'], {
    cwd: ROOT, env: { ...process.env, LEASEHOLD_DASHBOARD_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /leasehold dashboard on (http:\/\/\S+\/) \(token required\)/.exec(out);
        if (m) resolve(m[1]!);
      });
      child.on('close', (code) => reject(new Error(`dashboard exited ${code}: ${out}`)));
    });
    assert.equal((await getAs(url, 'evil.example')).status, 403);
    const ok = await getAs(`${url}schedules`, 'ops.example.com');
    assert.equal(ok.status, 200);
    assert.match(ok.body, /data-poll="1500"/);
    assert.match(ok.body, /<button class="">Run now<\/button>/);
    assert.match((await getAs(`${url}queues`, 'ops.example.com')).body, /Ended 5 min/);
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0);
});
