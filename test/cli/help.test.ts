/**
 * `--help` works everywhere: on the root and on every subcommand it prints usage to stdout
 * and exits 0, touching no database.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { cli, tempDb } from './support.js';

describe('leasehold --help', () => {
  const t = tempDb();
  after(() => t.cleanup());

  const CASES: [string[], RegExp][] = [
    [['--help'], /Usage: leasehold[\s\S]*migrate[\s\S]*enqueue[\s\S]*jobs[\s\S]*retry[\s\S]*cancel[\s\S]*worker[\s\S]*tick/],
    [['migrate', '--help'], /Usage: leasehold migrate/],
    [['enqueue', '--help'], /Usage: leasehold enqueue[\s\S]*--delay[\s\S]*--queue[\s\S]*--priority[\s\S]*--max-attempts[\s\S]*--key/],
    [['jobs', '--help'], /Usage: leasehold jobs[\s\S]*list[\s\S]*show/],
    [['jobs', 'list', '--help'], /Usage: leasehold jobs list[\s\S]*--status/],
    [['jobs', 'show', '--help'], /Usage: leasehold jobs show/],
    [['retry', '--help'], /Usage: leasehold retry/],
    [['cancel', '--help'], /Usage: leasehold cancel/],
    [['worker', '--help'], /Usage: leasehold worker[\s\S]*--handlers[\s\S]*--concurrency[\s\S]*--queues/],
    [['tick', '--help'], /Usage: leasehold tick[\s\S]*--max-seconds/],
    [['help', 'enqueue'], /Usage: leasehold enqueue/],
  ];

  test('root and every subcommand exit 0 with usage on stdout', async () => {
    const results = await Promise.all(CASES.map(([args]) => cli(['--db', t.db, ...args])));
    results.forEach((r, i) => {
      const [args, usage] = CASES[i] as [string[], RegExp];
      assert.equal(r.code, 0, `${args.join(' ')} exited ${r.code}: ${r.stderr}`);
      assert.match(r.stdout, usage, `${args.join(' ')} prints its usage`);
    });
    assert.equal(existsSync(t.file), false, 'help opened no database');
  });

  test('--version prints the version', async () => {
    const r = await cli(['--version']);
    assert.equal(r.code, 0);
    assert.match(r.stdout.trim(), /^\d+\.\d+\.\d+/);
  });
});
