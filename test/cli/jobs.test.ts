/**
 * The CLI's job commands against a SQLite file: migrate, enqueue with every flag, jobs
 * list/show, idempotency keys, retry and cancel, and LEASEHOLD_DB in place of --db.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AttemptRow, JobRow } from '../../src/core/storage.js';
import { cli, jobCount, tempDb, withDb } from './support.js';

type JsonJob = Omit<JobRow, 'runAt' | 'createdAt'> & { runAt: string; createdAt: string; created: boolean };

describe('leasehold enqueue / jobs / retry / cancel', () => {
  const t = tempDb();
  const run = (...args: string[]) => cli(['--db', t.db, ...args]);
  after(() => t.cleanup());

  before(async () => {
    const r = await run('migrate');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /migrated sqlite from version 0 to \d+/);
  });

  test('migrate again: up to date', async () => {
    const r = await run('migrate');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /up to date/);
  });

  test('enqueue with every flag, then jobs list --json and jobs show', async () => {
    const before = Date.now();
    const r = await run('enqueue', 'hello', '{"a":1}', '--delay', '2h', '--queue', 'q', '--priority', '3', '--max-attempts', '2', '--key', 'k', '--json');
    assert.equal(r.code, 0, r.stderr);
    const job = JSON.parse(r.stdout) as JsonJob;
    assert.equal(job.created, true);
    assert.equal(job.type, 'hello');
    assert.deepEqual(job.payload, { a: 1 });
    assert.equal(job.queue, 'q');
    assert.equal(job.priority, 3);
    assert.equal(job.maxAttempts, 2);
    assert.equal(job.idempotencyKey, 'k');
    assert.equal(job.status, 'queued');
    const delay = Date.parse(job.runAt) - Date.parse(job.createdAt);
    assert.ok(Math.abs(delay - 7_200_000) <= 50, `run_at is 2 h after created_at (${delay} ms)`);
    assert.ok(Date.parse(job.runAt) > before + 9_000);

    const list = await run('jobs', 'list', '--json');
    assert.equal(list.code, 0, list.stderr);
    const listed = JSON.parse(list.stdout) as { jobs: JsonJob[]; unhandled: unknown[] };
    assert.deepEqual(listed.jobs.map((j) => [j.id, j.type, j.queue, j.status]), [[job.id, 'hello', 'q', 'queued']]);
    assert.deepEqual(listed.unhandled, [], 'not due yet, so not reported');

    const show = await run('jobs', 'show', job.id, '--json');
    assert.equal(show.code, 0, show.stderr);
    const shown = JSON.parse(show.stdout) as { job: JsonJob; attempts: AttemptRow[] };
    assert.equal(shown.job.id, job.id);
    assert.equal(shown.job.priority, 3);
    assert.deepEqual(shown.attempts, []);

    const text = await run('jobs', 'show', job.id);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^id\\s+${job.id}$`, 'm'));
    assert.match(text.stdout, /^idempotency key\s+k$/m);
    assert.match(text.stdout, /^attempts\s+0\/2$/m);

    // the same --key again: the same job, nothing new
    const again = await run('enqueue', 'hello', '{"a":2}', '--key', 'k', '--json');
    assert.equal(again.code, 0, again.stderr);
    const dup = JSON.parse(again.stdout) as JsonJob;
    assert.equal(dup.id, job.id);
    assert.equal(dup.created, false);
    const plain = await run('enqueue', 'hello', '--key', 'k');
    assert.match(plain.stdout, new RegExp(`already enqueued \\(same key\\) job ${job.id}`));
    assert.equal(await jobCount(t.file), 1);
  });

  test('cancel then retry through the CLI', async () => {
    const e = await run('enqueue', 'to-cancel', '--delay', '1h', '--json');
    const id = (JSON.parse(e.stdout) as JsonJob).id;
    const c = await run('cancel', id);
    assert.equal(c.code, 0, c.stderr);
    assert.match(c.stdout, new RegExp(`job ${id} cancelled`));
    await withDb(t.file, async (s) => assert.equal((await s.jobs.get({ id }))?.status, 'cancelled'));

    // cancelling twice is an invalid state: exit 4 and a message
    const c2 = await run('cancel', id);
    assert.equal(c2.code, 4);
    assert.match(c2.stderr, /cannot cancel job \d+: it is cancelled \[INVALID_STATE\]/);

    const r = await run('retry', id);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`job ${id} is due now`));
    await withDb(t.file, async (s) => {
      const job = await s.jobs.get({ id });
      assert.equal(job?.status, 'queued');
      assert.ok((job?.runAt.getTime() ?? Infinity) <= Date.now() + 5);
    });
    // now due and no worker handles 'to-cancel': jobs list reports it
    const list = await run('jobs', 'list');
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /waiting for a worker that handles their type:\s*\nTYPE\s+QUEUE\s+DUE\s*\nto-cancel\s+default\s+1/);
    const json = JSON.parse((await run('jobs', 'list', '--json')).stdout) as { unhandled: unknown[] };
    assert.deepEqual(json.unhandled, [{ type: 'to-cancel', queue: 'default', due: 1, capped: false }]);
  });

  test('jobs list filters by status and type', async () => {
    const r = await run('jobs', 'list', '--status', 'queued', '--type', 'hello', '--json');
    assert.equal(r.code, 0, r.stderr);
    const { jobs } = JSON.parse(r.stdout) as { jobs: JsonJob[] };
    assert.ok(jobs.length >= 1);
    assert.ok(jobs.every((j) => j.status === 'queued' && j.type === 'hello'));
  });

  test('LEASEHOLD_DB is used when --db is not given', async () => {
    const r = await cli(['jobs', 'list', '--json'], { env: { LEASEHOLD_DB: t.db } });
    assert.equal(r.code, 0, r.stderr);
    const { jobs } = JSON.parse(r.stdout) as { jobs: JsonJob[] };
    assert.equal(jobs.length, await jobCount(t.file));
  });
});
