/**
 * `leasehold tick` (the crontab mode) with a tiny handlers module: it rescues expired leases,
 * runs every due job it has a handler for, leaves the rest, logs a summary, and exits.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { FIXTURES, cli, logLines, tempDb, withDb } from './support.js';

describe('leasehold tick', () => {
  const t = tempDb();
  const out = path.join(t.dir, 'ran.log');
  const run = (...args: string[]) => cli(['--db', t.db, ...args], { env: { CLI_TEST_OUT: out } });
  const ids: Record<string, string> = {};
  after(() => t.cleanup());

  before(async () => {
    assert.equal((await run('migrate')).code, 0);
    const enqueue = async (name: string, ...args: string[]) => {
      const r = await run('enqueue', ...args, '--json');
      assert.equal(r.code, 0, r.stderr);
      ids[name] = (JSON.parse(r.stdout) as { id: string }).id;
    };
    await enqueue('crashed', 'hello', '{"name":"crashed"}');
    await enqueue('hello1', 'hello', '{"name":"ada"}');
    await enqueue('hello2', 'hello', '{"name":"bob"}');
    await enqueue('fails', 'always-fails', '{}', '--max-attempts', '1');
    await enqueue('orphan', 'orphan-type', '{}');
    await enqueue('later', 'hello', '{"name":"later"}', '--delay', '1h');
    // a worker "crashed" holding this one: its lease (100 ms) expires, tick must rescue it
    await withDb(t.file, async (s) => {
      const claimed = await s.leases.claim({ workerId: 'dead-host:1', types: ['hello'], queues: null, limit: 1, leaseMs: 100 });
      assert.deepEqual(claimed.map((c) => c.id), [ids.crashed], 'the oldest due hello job');
    });
    await new Promise((r) => setTimeout(r, 150));
  });

  test('runs due jobs it handles, rescues the expired one, leaves the rest, exits 0', async () => {
    const t0 = Date.now();
    const r = await run('tick', '--handlers', path.join(FIXTURES, 'handlers.ts'), '--max-seconds', '20', '--poll', '50ms');
    const took = Date.now() - t0;
    assert.equal(r.code, 0, r.stderr);
    assert.ok(took < 10_000, `tick exited once nothing was left (${took} ms), not at --max-seconds`);

    const logs = logLines(r.stdout);
    const done = logs.find((l) => l.event === 'tick.done') as { processed: number; outcomes: Record<string, number>; timedOut: boolean } | undefined;
    assert.ok(done, 'a tick.done summary line');
    assert.equal(done.processed, 4);
    assert.deepEqual(done.outcomes, { succeeded: 3, dead: 1 });
    assert.equal(done.timedOut, false);
    assert.ok(logs.some((l) => l.event === 'job.rescued' && l.jobId === ids.crashed && l.lockedBy === 'dead-host:1'));

    assert.ok(existsSync(out));
    const ran = readFileSync(out, 'utf8').trim().split('\n').sort();
    assert.deepEqual(ran, ['always-fails', 'hello ada attempt=1', 'hello bob attempt=1', 'hello crashed attempt=2']);

    await withDb(t.file, async (s) => {
      const status = async (name: string) => (await s.jobs.get({ id: ids[name] as string }))?.status;
      assert.equal(await status('hello1'), 'succeeded');
      assert.equal(await status('hello2'), 'succeeded');
      assert.equal(await status('crashed'), 'succeeded');
      assert.equal(await status('fails'), 'dead');
      assert.equal(await status('orphan'), 'queued');
      assert.equal(await status('later'), 'queued');
      const orphan = await s.jobs.get({ id: ids.orphan as string });
      assert.equal(orphan?.attempts, 0);
      const crashed = await s.attempts.list({ jobId: ids.crashed as string });
      assert.deepEqual(crashed.map((a) => a.outcome), ['lease_expired', 'succeeded']);
      assert.deepEqual(await s.workers.list(), [], 'the tick worker deregistered');
    });
  });

  test('jobs list then reports the job no worker handles', async () => {
    const r = await run('jobs', 'list');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /waiting for a worker that handles their type:[\s\S]*orphan-type\s+default\s+1/);
    assert.doesNotMatch(r.stdout.split('waiting for')[1] ?? '', /hello/);
  });

  test('tick with a handlers module that does not exist → exit 2, clear message', async () => {
    const r = await run('tick', '--handlers', path.join(FIXTURES, 'nope.ts'));
    assert.equal(r.code, 2);
    assert.match(r.stderr, /cannot load handlers from .*nope\.ts/);
  });
});
