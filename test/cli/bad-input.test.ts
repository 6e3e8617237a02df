/**
 * Bad CLI input: a clear message on stderr in one style (`leasehold: <why> [CODE]`), one exit code
 * per kind of error (2 bad input or usage, 3 not found, 4 not allowed in the job's state), and
 * nothing written to the database — on SQLite, PostgreSQL and MySQL/MariaDB. Afterwards
 * `jobs list` still works.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { dbTargets, provisionDb } from '../process/support-db.js';
import type { CliResult } from './support.js';
import { cli, jobCount, tempDb, withDb } from './support.js';

/** Every error line: "leasehold: " + the reason + " [CODE]"; nothing in commander's own style. */
const ONE_STYLE = /^leasehold: \S.* \[[A-Z_]+\]$/;

function assertFailed(r: CliResult, code: number, message: RegExp, name: string): void {
  assert.equal(r.code, code, `${name}: exit ${r.code}, stderr: ${r.stderr}`);
  assert.match(r.stderr, message, `${name}: stderr says why`);
  const [first = ''] = r.stderr.split('\n');
  assert.match(first, ONE_STYLE, `${name}: one style of error line`);
  assert.doesNotMatch(r.stderr, /^error:/m, `${name}: no error line in commander's style`);
  assert.equal(r.stdout, '', `${name}: nothing on stdout`);
}

/** 30,000 nested arrays: 60 KB of text that overflows the stack of a recursive walk. */
const DEEP = `${'['.repeat(30_000)}${']'.repeat(30_000)}`;

/** Bad input every database must refuse the same way, before anything is written. */
const ANY_DB: [string, string[], RegExp][] = [
  ['empty --key', ['enqueue', 'hello', '{}', '--key', ''], /idempotencyKey must be a non-empty string.*\[INVALID_OPTION\]/],
  ['empty --queue', ['enqueue', 'hello', '{}', '--queue', ''], /queue must be 1-128 characters.*\[INVALID_OPTION\]/],
  ['--delay past 100 years', ['enqueue', 'hello', '{}', '--delay', '100000000d'], /--delay.*100000000d.*at most 100 years/],
  ['--run-at after 9999', ['enqueue', 'hello', '{}', '--run-at', '+010000-01-01T00:00:00Z'], /--run-at.*ISO 8601/],
  ['--run-at before 1970', ['enqueue', 'hello', '{}', '--run-at', '0500-01-01T00:00:00Z'], /--run-at.*from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z/],
  ['--run-at a guess', ['enqueue', 'hello', '{}', '--run-at', '5'], /--run-at.*ISO 8601/],
  ['payload nested 30,000 deep', ['enqueue', 'hello', DEEP], /payload nests deeper than 64 arrays\/objects \[INVALID_PAYLOAD\]/],
  ['interval schedule in an unknown zone', ['schedules', 'add', 'x', '--every', '1m', '--tz', 'Mars/Olympus', '--type', 't'], /unknown time zone.*Mars\/Olympus.*\[INVALID_SCHEDULE\]/],
  ['schedule with an empty --queue', ['schedules', 'add', 'x', '--every', '1m', '--type', 't', '--queue', ''], /queue must be.*\[INVALID_OPTION\]/],
];

describe('leasehold with bad input', () => {
  const t = tempDb();
  after(() => t.cleanup());
  before(async () => {
    const r = await cli(['--db', t.db, 'migrate']);
    assert.equal(r.code, 0, r.stderr);
  });

  const CASES: [string, string[], RegExp][] = [
    ['payload not JSON', ['enqueue', 'hello', '{a:1}'], /payload is not valid JSON.*\[INVALID_PAYLOAD\]/],
    ['oversized payload', ['enqueue', 'hello', JSON.stringify({ s: 'x'.repeat(70_000) })], /PAYLOAD_TOO_LARGE/],
    ['negative delay', ['enqueue', 'hello', '{}', '--delay', '-5s'], /--delay.*-5s.*duration.*\[USAGE\]/],
    ['delay without a number', ['enqueue', 'hello', '{}', '--delay', 'soon'], /--delay.*duration/],
    ['max attempts 0', ['enqueue', 'hello', '{}', '--max-attempts', '0'], /--max-attempts.*from 1/],
    ['max attempts -1', ['enqueue', 'hello', '{}', '--max-attempts', '-1'], /--max-attempts/],
    ['priority abc', ['enqueue', 'hello', '{}', '--priority', 'abc'], /--priority.*integer/],
    ['invalid run-at', ['enqueue', 'hello', '{}', '--run-at', 'tomorrowish'], /--run-at.*ISO 8601/],
    ['run-at and delay together', ['enqueue', 'hello', '{}', '--run-at', '2030-01-01T00:00:00Z', '--delay', '5s'], /cannot be used with/],
    ['bad queue name', ['enqueue', 'hello', '{}', '--queue', 'has space'], /queue must be.*\[INVALID_OPTION\]/],
    ['bad job type', ['enqueue', 'bad type', '{}'], /job type must be.*\[INVALID_OPTION\]/],
    ['unknown flag', ['enqueue', 'hello', '{}', '--bogus'], /unknown option '--bogus' \[USAGE\]/],
    ['unknown command', ['frobnicate'], /unknown command 'frobnicate' \[USAGE\]/],
    ['missing type', ['enqueue'], /missing required argument 'type' \[USAGE\]/],
    ['jobs show abc', ['jobs', 'show', 'abc'], /expected a job id.*\[USAGE\]/],
    ['retry abc', ['retry', 'abc'], /expected a job id/],
    ['jobs list --status nope', ['jobs', 'list', '--status', 'nope'], /--status.*Allowed choices/],
    ['jobs list --limit 0', ['jobs', 'list', '--limit', '0'], /--limit/],
    ['worker --lease past 100 years', ['worker', '--handlers', 'x.js', '--lease', '36600000h'], /--lease.*at most 100 years/],
    ...ANY_DB,
  ];

  const NOT_FOUND: [string, string[], RegExp][] = [
    ['retry 999', ['retry', '999'], /job 999 not found \[JOB_NOT_FOUND\]/],
    ['cancel 999', ['cancel', '999'], /job 999 not found \[JOB_NOT_FOUND\]/],
    ['jobs show 999', ['jobs', 'show', '999'], /job 999 not found \[JOB_NOT_FOUND\]/],
    ['schedules enable nope', ['schedules', 'enable', 'nope'], /schedule nope not found \[SCHEDULE_NOT_FOUND\]/],
  ];

  /** Independent processes, a few at a time; each must fail with `code` and write nothing. */
  async function runAll(cases: [string, string[], RegExp][], code: number): Promise<void> {
    for (let i = 0; i < cases.length; i += 4) {
      const batch = cases.slice(i, i + 4);
      const results = await Promise.all(batch.map(([, args]) => cli(['--db', t.db, ...args])));
      results.forEach((r, j) => {
        const [name, , message] = batch[j]!;
        assertFailed(r, code, message, name);
      });
    }
    assert.equal(await jobCount(t.file), 0);
    assert.deepEqual(await withDb(t.file, (s) => s.schedules.list()), []);
  }

  test('bad input or usage: exit 2 with one error line, and no job or schedule written', { timeout: 120_000 }, async () => {
    await runAll(CASES, 2);
  });

  test('not found: exit 3', { timeout: 60_000 }, async () => {
    await runAll(NOT_FOUND, 3);
  });

  test('not allowed in the job’s state: exit 4', { timeout: 60_000 }, async () => {
    const e = await cli(['--db', t.db, 'enqueue', 'to-cancel', '--delay', '1h', '--json']);
    assert.equal(e.code, 0, e.stderr);
    const id = (JSON.parse(e.stdout) as { id: string }).id;
    assert.equal((await cli(['--db', t.db, 'cancel', id])).code, 0);
    assertFailed(await cli(['--db', t.db, 'cancel', id]), 4, new RegExp(`cannot cancel job ${id}: it is cancelled \\[INVALID_STATE\\]`), 'cancel twice');
    await withDb(t.file, async (s) => assert.equal((await s.jobs.get({ id }))?.status, 'cancelled'));
  });

  test('a usage error still points at --help, after its one error line', async () => {
    const r = await cli(['--db', t.db, 'enqueue', 'hello', '{}', '--bogus']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^leasehold: unknown option '--bogus' \[USAGE\]\n\(run with --help for usage\)\n$/);
  });

  test('--db with an invalid URL → exit 2, INVALID_URL', async () => {
    const jobs = await jobCount(t.file);
    for (const url of ['nope://x', 'sqlite:', 'mysql://host']) {
      const r = await cli(['--db', url, 'jobs', 'list']);
      assertFailed(r, 2, /invalid database URL.*\[INVALID_URL\]/, url);
    }
    const r = await cli(['--db', 'nope://x', 'enqueue', 'hello', '{}']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /INVALID_URL/);
    assert.equal(await jobCount(t.file), jobs);
  });
});

describe('a row written before times were checked', () => {
  const t = tempDb();
  after(() => t.cleanup());

  test('jobs list and jobs show still work, the time shown as invalid', { timeout: 60_000 }, async () => {
    assert.equal((await cli(['--db', t.db, 'migrate'])).code, 0);
    const e = await cli(['--db', t.db, 'enqueue', 'old', '{}', '--json']);
    assert.equal(e.code, 0, e.stderr);
    const id = (JSON.parse(e.stdout) as { id: string }).id;
    // what `--delay 100000000d` wrote before: a run_at past the last time JavaScript can hold
    const raw = new Database(t.file);
    raw.prepare('UPDATE leasehold_jobs SET run_at = ? WHERE id = ?').run(Date.now() + 8.64e15, id);
    raw.close();
    for (const args of [['jobs', 'list'], ['jobs', 'show', id]]) {
      const r = await cli(['--db', t.db, ...args]);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, /invalid date/, args.join(' '));
    }
  });
});

for (const target of await dbTargets('cli bad input on every database')) {
  describe(`leasehold with bad input (${target.kind})`, { skip: target.skip }, () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-cli-'));
    let db: Awaited<ReturnType<typeof provisionDb>>;
    before(async () => {
      db = await provisionDb(target.kind, target.server, dir);
      const r = await cli(['--db', db.url, 'migrate']);
      assert.equal(r.code, 0, r.stderr);
    });
    after(async () => {
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('each exits 2, writes nothing, and jobs list works afterwards', { timeout: 180_000 }, async () => {
      for (let i = 0; i < ANY_DB.length; i += 3) {
        const batch = ANY_DB.slice(i, i + 3);
        const results = await Promise.all(batch.map(([, args]) => cli(['--db', db.url, ...args])));
        results.forEach((r, j) => {
          const [name, , message] = batch[j]!;
          assertFailed(r, 2, message, name);
        });
      }
      const list = await cli(['--db', db.url, 'jobs', 'list', '--json']);
      assert.equal(list.code, 0, list.stderr);
      assert.deepEqual((JSON.parse(list.stdout) as { jobs: unknown[] }).jobs, []);
      const schedules = await cli(['--db', db.url, 'schedules', 'list', '--json']);
      assert.deepEqual(JSON.parse(schedules.stdout), []);
    });

    test('the edges of the supported range are stored and listed', { timeout: 60_000 }, async () => {
      for (const at of ['1970-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z']) {
        const r = await cli(['--db', db.url, 'enqueue', 'edge', '{}', '--run-at', at, '--json']);
        assert.equal(r.code, 0, r.stderr);
        assert.equal((JSON.parse(r.stdout) as { runAt: string }).runAt, at);
      }
      const far = await cli(['--db', db.url, 'enqueue', 'edge', '{}', '--delay', '36500d']);
      assert.equal(far.code, 0, far.stderr);
      const list = await cli(['--db', db.url, 'jobs', 'list']);
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /1970-01-01T00:00:00\.000Z[\s\S]*9999-12-31T23:59:59\.999Z|9999-12-31T23:59:59\.999Z[\s\S]*1970-01-01T00:00:00\.000Z/);
    });
  });
}
