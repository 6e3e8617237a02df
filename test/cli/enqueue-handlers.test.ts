/**
 * `leasehold enqueue --handlers <module>`: the job definitions decide as for the application's
 * client — the type's policies are the job's defaults (flags still win), the payload is checked
 * against the type's schema, an unknown type is refused — and bad input
 * fails with exit 2 before the database is even opened. Without --handlers nothing changes.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { JobRow } from '../../src/core/storage.js';
import { FIXTURES, cli, jobCount, tempDb } from './support.js';

const HANDLERS = path.join(FIXTURES, 'enqueue-handlers.ts');
type JsonJob = Omit<JobRow, 'runAt'> & { created: boolean };

describe('leasehold enqueue --handlers', () => {
  const t = tempDb();
  const run = (...args: string[]) => cli(['--db', t.db, ...args]);
  const enqueued = async (...args: string[]) => {
    const r = await run('enqueue', ...args, '--json');
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as JsonJob;
  };
  after(() => t.cleanup());
  before(async () => {
    const r = await run('migrate');
    assert.equal(r.code, 0, r.stderr);
  });

  test("the type's policies are the defaults; flags win", async () => {
    const job = await enqueued('send-email', '{"to":"a@example.com"}', '--handlers', HANDLERS);
    assert.equal((job.payload as { to: string }).to, 'a@example.com');
    assert.deepEqual([job.queue, job.priority, job.maxAttempts, job.timeoutMs, job.maxRuntimeMs], ['mail', 4, 9, 90_000, 600_000]);

    const flagged = await enqueued('send-email', '{"to":"b@example.com"}', '--queue', 'urgent', '--max-attempts', '2', '--timeout', '5s', '--priority', '-1', '--handlers', HANDLERS);
    assert.deepEqual([flagged.queue, flagged.priority, flagged.maxAttempts, flagged.timeoutMs], ['urgent', -1, 2, 5_000]);

    // LEASEHOLD_HANDLERS names the module as for `worker`
    const r = await cli(['--db', t.db, 'enqueue', 'send-email', '{"to":"c@example.com"}', '--json'], { env: { LEASEHOLD_HANDLERS: HANDLERS } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as JsonJob).maxAttempts, 9);
  });

  test('a payload the schema refuses, an unknown type, a module that does not load: exit 2, nothing written', async () => {
    const count = await jobCount(t.file);
    const cases: [string[], RegExp][] = [
      [['send-email', '{"to":"not an address"}'], /^leasehold: payload for send-email does not match its schema: to: .* \[PAYLOAD_SCHEMA\]$/],
      [['send-email', '{}'], /payload for send-email does not match its schema: to: .*\[PAYLOAD_SCHEMA\]/],
      [['sned-email', '{"to":"a@example.com"}'], /^leasehold: .*sned-email.*send-email.* \[UNKNOWN_JOB_TYPE\]$/],
    ];
    for (const [args, message] of cases) {
      const r = await run('enqueue', ...args, '--handlers', HANDLERS);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr.trim(), message);
      assert.equal(r.stdout, '');
    }
    const missing = await run('enqueue', 'plain', '--handlers', path.join(FIXTURES, 'no-such-module.ts'));
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /cannot load handlers from .*no-such-module\.ts.*\[INVALID_OPTION\]/);
    assert.equal(await jobCount(t.file), count);
  });

  test('bad input is refused before the database is opened', async () => {
    const fresh = tempDb();
    try {
      const r = await cli(['--db', fresh.db, 'enqueue', 'send-email', '{"to":1}', '--handlers', HANDLERS]);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(existsSync(fresh.file), false, 'no database file was created');
    } finally {
      fresh.cleanup();
    }
  });

  test('without --handlers the type and payload are taken as given, with the global defaults', async () => {
    const job = await enqueued('send-email', '{"to":"not an address"}');
    assert.deepEqual(job.payload, { to: 'not an address' });
    assert.deepEqual([job.queue, job.priority, job.maxAttempts], ['default', 0, 5]);
  });
});
