/**
 * Stored text never drives the terminal: every table the CLI prints (jobs, schedules, locks,
 * queues) shows control characters (C0, DEL, C1) and bidi overrides as visible \u escapes. The
 * rows are written straight through storage, as another version or a hand-made row could, so
 * no input check stands in front of the printing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { errorLine } from '../../src/cli/errors.js';
import { terminalSafe } from '../../src/cli/format.js';
import { cli, tempDb, withDb } from './support.js';

const EVIL = 'x\u001b]0;owned\u0007\u001b[2J\u009b31m\u007f\u202eevil\rz';
const RAW = ['\u001b', '\u0007', '\u009b', '\u007f', '\u202e', '\r'];

describe('the CLI prints stored text made safe for the terminal', () => {
  const t = tempDb();
  const run = (...args: string[]) => cli(['--db', t.db, ...args]);
  after(() => t.cleanup());
  before(async () => {
    assert.equal((await run('migrate')).code, 0);
    await withDb(t.file, async (s) => {
      await s.jobs.insert({ jobs: [{ queue: EVIL, type: EVIL, payload: { note: EVIL }, priority: 0, runAfterMs: 0, maxAttempts: 1, idempotencyKey: EVIL, timeoutMs: 1000, maxRuntimeMs: 1000 }] });
      const now = new Date();
      await s.schedules.upsert({ items: [{ name: EVIL, cron: '0 * * * *', everyMs: null, timezone: 'UTC', type: EVIL, payload: {}, queue: 'q', priority: 0, maxAttempts: 1, misfire: 'skip', misfireWindowMs: null, misfireMax: 1, enabled: true, source: 'cli', nextRunAt: now }] });
      await s.locks.acquire({ name: EVIL, owner: EVIL, ttlMs: 60_000, slots: 1 });
    });
  });

  for (const args of [['jobs', 'list'], ['jobs', 'show', '1'], ['schedules', 'list'], ['locks', 'list'], ['queues', 'list']]) {
    test(args.join(' '), async () => {
      const r = await run(...args);
      assert.equal(r.code, 0, r.stderr);
      for (const c of RAW) assert.ok(!r.stdout.includes(c), `no raw ${JSON.stringify(c)} in ${args.join(' ')}`);
      assert.match(r.stdout, /x\\u001b\]0;owned\\u0007\\u001b\[2J\\u009b31m\\u007f\\u202eevil\\u000dz/);
    });
  }

  test('an error quoting the input prints it escaped on stderr', async () => {
    const r = await run('schedules', 'run-now', `${EVIL}-missing`);
    assert.notEqual(r.code, 0);
    for (const c of RAW) assert.ok(!r.stderr.includes(c), `no raw ${JSON.stringify(c)} in stderr`);
    assert.equal(errorLine(`no schedule ${EVIL}`, 'X'), `leasehold: no schedule ${terminalSafe(EVIL)} [X]\n`);
  });

  test('terminalSafe: what it escapes and what it keeps', () => {
    assert.equal(terminalSafe('a\tb'), 'a\tb');
    assert.equal(terminalSafe('line\nnext'), 'line\\nnext');
    assert.equal(terminalSafe('\u0000\u001f\u007f\u0080\u009f\u202a\u2069'), '\\u0000\\u001f\\u007f\\u0080\\u009f\\u202a\\u2069');
    assert.equal(terminalSafe('ünïcödé ✓ 日本'), 'ünïcödé ✓ 日本');
  });
});
