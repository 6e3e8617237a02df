/**
 * Bad CLI input: exit code 2, a clear message on stderr, and nothing written to the database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { cli, jobCount, tempDb } from './support.js';

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
    ['negative delay', ['enqueue', 'hello', '{}', '--delay', '-5s'], /--delay.*-5s.*duration/],
    ['delay without a number', ['enqueue', 'hello', '{}', '--delay', 'soon'], /--delay.*duration/],
    ['max attempts 0', ['enqueue', 'hello', '{}', '--max-attempts', '0'], /--max-attempts.*from 1/],
    ['max attempts -1', ['enqueue', 'hello', '{}', '--max-attempts', '-1'], /--max-attempts/],
    ['priority abc', ['enqueue', 'hello', '{}', '--priority', 'abc'], /--priority.*integer/],
    ['invalid run-at', ['enqueue', 'hello', '{}', '--run-at', 'tomorrowish'], /--run-at.*ISO-8601/],
    ['run-at and delay together', ['enqueue', 'hello', '{}', '--run-at', '2030-01-01T00:00:00Z', '--delay', '5s'], /cannot be used with/],
    ['bad queue name', ['enqueue', 'hello', '{}', '--queue', 'has space'], /queue must be.*\[INVALID_OPTION\]/],
    ['bad job type', ['enqueue', 'bad type', '{}'], /job type must be.*\[INVALID_OPTION\]/],
    ['unknown flag', ['enqueue', 'hello', '{}', '--bogus'], /unknown option '--bogus'/],
    ['unknown command', ['frobnicate'], /unknown command 'frobnicate'/],
    ['missing type', ['enqueue'], /missing required argument 'type'/],
    ['jobs show abc', ['jobs', 'show', 'abc'], /expected a job id/],
    ['retry abc', ['retry', 'abc'], /expected a job id/],
    ['retry 999 (not found)', ['retry', '999'], /job 999 not found \[JOB_NOT_FOUND\]/],
    ['cancel 999 (not found)', ['cancel', '999'], /job 999 not found \[JOB_NOT_FOUND\]/],
    ['jobs show 999 (not found)', ['jobs', 'show', '999'], /job 999 not found \[JOB_NOT_FOUND\]/],
    ['jobs list --status nope', ['jobs', 'list', '--status', 'nope'], /--status.*Allowed choices/],
    ['jobs list --limit 0', ['jobs', 'list', '--limit', '0'], /--limit/],
  ];

  test('each exits 2 with a message on stderr and writes no job', async () => {
    // independent processes: run them a few at a time
    for (let i = 0; i < CASES.length; i += 4) {
      const batch = CASES.slice(i, i + 4);
      const results = await Promise.all(batch.map(([, args]) => cli(['--db', t.db, ...args])));
      results.forEach((r, j) => {
        const [name, , message] = batch[j] as [string, string[], RegExp];
        assert.equal(r.code, 2, `${name}: exit ${r.code}, stderr: ${r.stderr}`);
        assert.match(r.stderr, message, `${name}: stderr says why`);
        assert.equal(r.stdout, '', `${name}: nothing on stdout`);
      });
    }
    assert.equal(await jobCount(t.file), 0);
  });

  test('--db with an invalid URL → exit 2, INVALID_URL', async () => {
    for (const url of ['nope://x', 'sqlite:', 'mysql://host']) {
      const r = await cli(['--db', url, 'jobs', 'list']);
      assert.equal(r.code, 2, `${url}: ${r.stderr}`);
      assert.match(r.stderr, /invalid database URL.*\[INVALID_URL\]/);
    }
    const r = await cli(['--db', 'nope://x', 'enqueue', 'hello', '{}']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /INVALID_URL/);
    assert.equal(await jobCount(t.file), 0);
  });
});
