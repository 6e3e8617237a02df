/**
 * Four scheduler processes against one database (a SQLite file, and PostgreSQL), a schedule firing
 * every second for 20 s (the issue asks for a minute; 20 s keeps CI time sane and already spans
 * 20 slots, each contended by four processes): enqueued jobs == slots, no duplicate, no gap.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { upsertSchedule } from '../../src/runtime/scheduler.js';
import { openStorage } from '../../src/storage/open.js';
import { serverFor } from '../support/databases.js';

const CHILD = fileURLToPath(new URL('./fixtures/scheduler-child.ts', import.meta.url));
const RUN_MS = 20_000;

async function fourSchedulers(dbUrl: string): Promise<void> {
  const storage = await openStorage(dbUrl);
  await storage.migrate();
  const name = `every-second-${Date.now()}`;
  await upsertSchedule(storage, { name, type: 'tick', everyMs: 1000 });
  const kids = Array.from({ length: 4 }, () => spawn(process.execPath, ['--import', 'tsx', CHILD, dbUrl], { stdio: ['ignore', 'pipe', 'inherit'] }));
  await Promise.all(kids.map((k) => new Promise<void>((r) => k.stdout.once('data', () => r()))));
  await new Promise((r) => setTimeout(r, RUN_MS));
  await storage.schedules.setEnabled({ name, enabled: false });
  await Promise.all(kids.map((k) => new Promise((r) => { k.once('exit', r); k.kill('SIGTERM'); })));
  const jobs = (await storage.jobs.list({ type: 'tick', limit: 1000 })).filter((j) => j.scheduleName === name);
  const slots = jobs.map((j) => j.slotAt!.getTime()).sort((a, b) => a - b);
  await storage.close();
  assert.ok(slots.length >= RUN_MS / 1000 - 3, `about ${RUN_MS / 1000} slots fired, got ${slots.length}`);
  assert.equal(new Set(slots).size, slots.length, 'no duplicate slot');
  for (let i = 1; i < slots.length; i++) assert.equal(slots[i]! - slots[i - 1]!, 1000, `no gap after ${new Date(slots[i - 1]!).toISOString()}`);
}

describe('four scheduler processes, one every-second schedule for 20 s', () => {
  it('SQLite file: one job per slot, no duplicate, no gap', { timeout: 60_000 }, async () => {
    await fourSchedulers(`sqlite:${path.join(mkdtempSync(path.join(tmpdir(), 'lh-sched-')), 'db.sqlite')}`);
  });
  it('PostgreSQL: one job per slot, no duplicate, no gap', { timeout: 60_000 }, async (t) => {
    const url = await serverFor('postgres', 'scheduler processes on postgres');
    if (url === null) return t.skip('postgres unreachable');
    const schema = `lh_sched_${Date.now()}`;
    const u = new URL(url);
    u.searchParams.set('schema', schema);
    try {
      await fourSchedulers(u.toString());
    } finally {
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await admin.end();
      }
    }
  });
});
