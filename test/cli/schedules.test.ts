/**
 * `leasehold schedules add|list|disable|enable|run-now|remove` and `leasehold locks list`, as
 * real processes on a SQLite file: the happy path, and bad input (invalid cron, unknown time
 * zone, zero interval, bad JSON…) exiting 2 (an unknown schedule 3) with nothing written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LockRow, ScheduleRow } from '../../src/core/index.js';
import { createLocks } from '../../src/runtime/locks.js';
import { cli, jobCount, tempDb, withDb } from './support.js';

/** Run and insist on exit 0; stdout. */
async function ok(args: string[]): Promise<string> {
  const r = await cli(args);
  assert.equal(r.code, 0, `leasehold ${args.join(' ')}: exit ${r.code}\nstderr: ${r.stderr}`);
  return r.stdout;
}

describe('leasehold schedules and locks (the two databases below run side by side)', { concurrency: true }, () => {
  describe('leasehold schedules: happy path', () => {
    const t = tempDb();
    after(() => t.cleanup());
    before(async () => {
      await ok(['--db', t.db, 'migrate']);
    });

    test('add (cron and --every), list, disable, enable, run-now, remove', { timeout: 60_000 }, async () => {
      const db = ['--db', t.db];
      const [added, every] = await Promise.all([
        ok([...db, 'schedules', 'add', 'nightly-cleanup', '--cron', '0 2 * * *', '--tz', 'Europe/Warsaw', '--type', 'cleanup', '--payload', '{"days":30}', '--json']),
        ok([...db, 'schedules', 'add', 'ten-minutes', '--every', '10m', '--type', 'poll', '--misfire', 'all', '--misfire-max', '5']),
      ]);
      const row = JSON.parse(added) as ScheduleRow;
      assert.equal(row.name, 'nightly-cleanup');
      assert.equal(row.cron, '0 2 * * *');
      assert.equal(row.timezone, 'Europe/Warsaw');
      assert.deepEqual(row.payload, { days: 30 });
      assert.equal(row.source, 'cli');
      assert.equal(row.enabled, true);
      // 02:00 in Warsaw is 00:00 or 01:00 UTC
      assert.match(String(row.nextRunAt), /T0[01]:00:00\.000Z$/);
      assert.match(every, /schedule ten-minutes saved; next run \d{4}-/);

      const rows = JSON.parse(await ok([...db, 'schedules', 'list', '--json'])) as ScheduleRow[];
      assert.deepEqual(rows.map((r) => r.name).sort(), ['nightly-cleanup', 'ten-minutes']);
      const ten = rows.find((r) => r.name === 'ten-minutes')!;
      assert.equal(ten.everyMs, 600_000);
      assert.equal(ten.misfire, 'all');
      assert.equal(ten.misfireMax, 5);
      assert.equal(new Date(ten.nextRunAt!).getTime() % 600_000, 0, 'interval slots are aligned to the epoch');

      assert.match(await ok([...db, 'schedules', 'disable', 'nightly-cleanup']), /schedule nightly-cleanup disabled/);
      const table = await ok([...db, 'schedules', 'list']);
      assert.match(table, /NAME\s+WHEN\s+TZ/);
      assert.match(table, /nightly-cleanup\s+0 2 \* \* \*\s+Europe\/Warsaw\s+cleanup\s+skip\s+no/);
      assert.match(table, /ten-minutes\s+every 600000 ms\s+-\s+poll\s+all \(max 5\)\s+yes/);
      assert.equal((await withDb(t.file, (s) => s.schedules.get({ name: 'nightly-cleanup' })))?.enabled, false);

      assert.match(await ok([...db, 'schedules', 'enable', 'nightly-cleanup']), /schedule nightly-cleanup enabled; next run \d{4}-/);
      const enabled = await withDb(t.file, (s) => s.schedules.get({ name: 'nightly-cleanup' }));
      assert.equal(enabled?.enabled, true);
      assert.ok(enabled!.nextRunAt!.getTime() > Date.now() - 5_000, 'resumes at a future slot');

      const runNow = await ok([...db, 'schedules', 'run-now', 'nightly-cleanup']);
      const id = /enqueued job (\S+) \(cleanup\) for schedule nightly-cleanup/.exec(runNow)?.[1];
      assert.ok(id, runNow);
      const job = await withDb(t.file, (s) => s.jobs.get({ id }));
      assert.equal(job?.scheduleName, 'nightly-cleanup');
      assert.ok(job?.slotAt, 'run-now jobs carry a slot time too');
      assert.deepEqual(job?.payload, { days: 30 });
      assert.equal(job?.status, 'queued');
      const afterRun = await withDb(t.file, (s) => s.schedules.get({ name: 'nightly-cleanup' }));
      assert.equal(afterRun?.nextRunAt?.getTime(), enabled!.nextRunAt!.getTime(), 'run-now leaves the regular slots alone');

      assert.match(await ok([...db, 'schedules', 'remove', 'ten-minutes']), /schedule ten-minutes removed/);
      const left = JSON.parse(await ok([...db, 'schedules', 'list', '--json'])) as ScheduleRow[];
      assert.deepEqual(left.map((r) => r.name), ['nightly-cleanup']);
      assert.equal(await jobCount(t.file), 1, 'the run-now job is the only job');
    });
  });

  describe('leasehold locks list, and schedules with bad input', () => {
    const t = tempDb();
    after(() => t.cleanup());
    before(async () => {
      await ok(['--db', t.db, 'migrate']);
      await ok(['--db', t.db, 'schedules', 'add', 'keep-me', '--every', '1h', '--type', 'hourly']);
    });

    test('locks list: holder, since when, expires when; --name and --json', { timeout: 30_000 }, async () => {
      await withDb(t.file, async (s) => {
        const locks = createLocks(s, { owner: 'billing-host:42' });
        assert.ok(await locks.tryAcquire('billing', { ttlMs: 600_000 }));
        assert.ok(await locks.tryAcquire('pool', { ttlMs: 600_000, slots: 3 }));
      });
      const [text, json, none] = await Promise.all([
        ok(['--db', t.db, 'locks', 'list']),
        ok(['--db', t.db, 'locks', 'list', '--name', 'billing', '--json']),
        ok(['--db', t.db, 'locks', 'list', '--name', 'nobody-holds-this']),
      ]);
      assert.match(text, /NAME\s+SLOT\s+HOLDER\s+FENCE\s+SINCE\s+EXPIRES\s+STATE/);
      assert.match(text, /billing\s+0\s+billing-host:42\s+1\s+\d{4}-\S+\s+\d{4}-\S+\s+held/);
      assert.match(text, /pool\s+0\s+billing-host:42/);
      const rows = JSON.parse(json) as LockRow[];
      assert.equal(rows.length, 1);
      assert.equal(rows[0]?.name, 'billing');
      assert.equal(rows[0]?.owner, 'billing-host:42');
      assert.equal(new Date(rows[0]!.expiresAt).getTime() - new Date(rows[0]!.acquiredAt).getTime(), 600_000);
      assert.match(none, /\(no locks held\)/);
    });

    const BAD: [string, string[], RegExp, number][] = [
      ['invalid cron', ['schedules', 'add', 'x', '--cron', '61 * * * *', '--type', 't'], /invalid cron.*\[INVALID_SCHEDULE\]/, 2],
      ['unknown time zone', ['schedules', 'add', 'x', '--cron', '0 2 * * *', '--tz', 'Mars/Olympus', '--type', 't'], /unknown time zone.*\[INVALID_SCHEDULE\]/, 2],
      ['unknown time zone of an interval', ['schedules', 'add', 'x', '--every', '1m', '--tz', 'Mars/Olympus', '--type', 't'], /unknown time zone.*\[INVALID_SCHEDULE\]/, 2],
      ['zero interval', ['schedules', 'add', 'x', '--every', '0s', '--type', 't'], /every must be .*got 0 \[INVALID_SCHEDULE\]/, 2],
      ['cron and every', ['schedules', 'add', 'x', '--cron', '* * * * *', '--every', '1m', '--type', 't'], /cannot be used with/, 2],
      ['neither cron nor every', ['schedules', 'add', 'x', '--type', 't'], /exactly one of cron and every.*\[INVALID_SCHEDULE\]/, 2],
      ['payload not JSON', ['schedules', 'add', 'x', '--every', '1m', '--type', 't', '--payload', '{a:1}'], /\[INVALID_PAYLOAD\]/, 2],
      ['enable unknown', ['schedules', 'enable', 'nope'], /schedule nope not found \[SCHEDULE_NOT_FOUND\]/, 3],
      ['run-now unknown', ['schedules', 'run-now', 'nope'], /\[SCHEDULE_NOT_FOUND\]/, 3],
    ];

    test('bad input: each exits 2 (an unknown schedule 3) with the reason on stderr; no schedule, job or change written', { timeout: 90_000 }, async () => {
      const before = await withDb(t.file, (s) => s.schedules.list());
      for (let i = 0; i < BAD.length; i += 4) {
        const batch = BAD.slice(i, i + 4);
        const results = await Promise.all(batch.map(([, args]) => cli(['--db', t.db, ...args])));
        results.forEach((r, j) => {
          const [name, , message, code] = batch[j]!;
          assert.equal(r.code, code, `${name}: exit ${r.code}, stderr: ${r.stderr}`);
          assert.match(r.stderr, message, `${name}: stderr says why`);
          assert.equal(r.stdout, '', `${name}: nothing on stdout`);
        });
      }
      assert.deepEqual(await withDb(t.file, (s) => s.schedules.list()), before, 'schedules unchanged');
      assert.equal(await jobCount(t.file), 0, 'no job written');
    });
  });
});
