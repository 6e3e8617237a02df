/**
 * Alert rules from the command line: the `--alert` spec grammar and its errors, the
 * `--alerts-file` JSON, bad flags refused (exit 2, nothing written), and a `leasehold tick` that
 * evaluates its rules and delivers the notification to a local HTTP receiver as a job.
 */
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { InvalidArgumentError } from 'commander';
import { alertOptionsFrom, parseAlertSpec } from '../../src/cli/alert-options.js';
import { ALERT_WEBHOOK_TYPE } from '../../src/core/index.js';
import { Receiver } from '../runtime/alerts-support.js';
import { FIXTURES, cli, logLines, tempDb, withDb } from './support.js';

describe('--alert specs', () => {
  test('each kind, with its keys', () => {
    assert.deepEqual(parseAlertSpec('failure-rate:type=email,window=5m,above=0.2'), { kind: 'failureRate', type: 'email', windowMs: 300_000, above: 0.2 });
    assert.deepEqual(parseAlertSpec('failure-rate:queue=mail, window=90s, above=20%, min-attempts=10, name=mail-failing'), {
      kind: 'failureRate', queue: 'mail', windowMs: 90_000, above: 0.2, minAttempts: 10, name: 'mail-failing',
    });
    assert.deepEqual(parseAlertSpec('dead:window=1h'), { kind: 'deadJobs', windowMs: 3_600_000 });
    assert.deepEqual(parseAlertSpec('dead:window=1d,above=5,type=invoice'), { kind: 'deadJobs', windowMs: 86_400_000, above: 5, type: 'invoice' });
    assert.deepEqual(parseAlertSpec('stuck:queue=default,age=10m,for=1m'), { kind: 'stuckQueue', queue: 'default', maxAgeMs: 600_000, forMs: 60_000 });
    assert.deepEqual(parseAlertSpec('unhandled'), { kind: 'unhandled' });
    assert.deepEqual(parseAlertSpec('unhandled:type=pdf,keep-firing-for=5m'), { kind: 'unhandled', type: 'pdf', keepFiringForMs: 300_000 });
  });

  test('a bad spec says what was expected', () => {
    const refused = (spec: string, pattern: RegExp) =>
      assert.throws(() => parseAlertSpec(spec), (e: Error) => e instanceof InvalidArgumentError && pattern.test(e.message), spec);
    refused('cpu:above=1', /expected an alert like failure-rate:window=5m,above=0.2 \(kinds: failure-rate, dead, stuck, unhandled\); got "cpu:above=1"/);
    refused('failure-rate:window=5m', /failure-rate needs above=…; got/);
    refused('failure-rate', /failure-rate needs window=… and above=…/);
    refused('failure-rate:window=5m,above=1.5', /above must be a ratio from 0 to below 1/);
    refused('failure-rate:window=soon,above=0.2', /failure-rate: window: expected a duration like 30s/);
    refused('failure-rate:window=5m,above=lots', /failure-rate: above: expected a number; got "lots"/);
    refused('stuck:age=10m,type=x', /stuck takes queue, age, name, for, keep-firing-for; not "type"/);
    refused('dead:window=1h,window=2h', /dead: window given twice/);
    refused('dead:window', /dead: expected key=value, got "window"/);
    refused('unhandled:name=two words', /alert rule name must be/);
  });

  test('--alerts-file: specs or rule objects, webhooks and an interval; merged with the flags', async () => {
    const t = tempDb();
    try {
      const file = path.join(t.dir, 'alerts.json');
      writeFileSync(file, JSON.stringify({ rules: ['dead:window=1h', { kind: 'stuckQueue', maxAgeMs: 60_000 }], webhooks: ['https://hooks.example.com/x'], interval: '10s' }));
      assert.deepEqual(await alertOptionsFrom({ alertsFile: file, alert: [{ kind: 'unhandled' }], alertWebhook: ['http://127.0.0.1:9/y'] }), {
        rules: [{ kind: 'deadJobs', windowMs: 3_600_000 }, { kind: 'stuckQueue', maxAgeMs: 60_000 }, { kind: 'unhandled' }],
        webhooks: ['https://hooks.example.com/x', 'http://127.0.0.1:9/y'],
        intervalMs: 10_000,
      });
      assert.equal(await alertOptionsFrom({}), undefined);
      const refused = async (content: string, pattern: RegExp) => {
        writeFileSync(file, content);
        await assert.rejects(alertOptionsFrom({ alertsFile: file }), (e: Error & { code?: string }) => e.code === 'INVALID_OPTION' && pattern.test(e.message), content);
      };
      await refused('{"rules": [', new RegExp(`--alerts-file ${file}: .*JSON`));
      await refused('{"rules": [], "hooks": []}', /unknown key\(s\) hooks \(expected rules, webhooks, interval\)/);
      await refused('{"rules": [{"kind": "stuckQueue"}]}', /maxAgeMs must be an integer/);
      await refused('{"rules": ["dead"]}', /dead needs window=…/);
      await refused('{"rules": ["unhandled"], "webhooks": ["mailto:a@b"]}', /alert webhook must be an http\(s\) URL/);
      await refused('{"rules": ["unhandled", "unhandled"]}', /two alert rules are named unhandled/);
      await assert.rejects(alertOptionsFrom({ alertWebhook: ['https://hooks.example.com/x'] }), /alert webhooks were given but no alert rule/);
    } finally {
      t.cleanup();
    }
  });
});

describe('leasehold worker/tick with alerts', () => {
  const t = tempDb();
  let receiver: Receiver;
  const run = (...args: string[]) => cli(['--db', t.db, ...args]);
  before(async () => {
    receiver = await Receiver.start();
  });
  after(async () => {
    await receiver.close();
    t.cleanup();
  });

  test('bad alert flags exit 2 with one line, before the database is touched', async () => {
    const cases: [string[], RegExp][] = [
      [['--alert', 'stuck'], /option '--alert <spec>' argument 'stuck' is invalid\. stuck needs age=…; got "stuck" \[USAGE\]/],
      [['--alert-webhook', 'ftp://x'], /alert webhook must be an http\(s\) URL; got "ftp:\/\/x" \[USAGE\]/],
      [['--alert-webhook', 'http://127.0.0.1:9/x'], /alert webhooks were given but no alert rule: add --alert .*\[INVALID_OPTION\]/],
      [['--alerts-file', path.join(t.dir, 'missing.json')], /--alerts-file .*missing\.json: ENOENT.*\[INVALID_OPTION\]/],
    ];
    for (const [flags, pattern] of cases) {
      const r = await run('worker', '--handlers', path.join(FIXTURES, 'handlers.ts'), ...flags);
      assert.equal(r.code, 2, `${flags.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, pattern);
      assert.equal(existsSync(t.file), false, 'no database was created');
    }
  });

  test('tick evaluates its rules and delivers the notification to the webhook, as a job', async () => {
    assert.equal((await run('migrate')).code, 0);
    assert.equal((await run('enqueue', 'orphan-type', '{}')).code, 0);
    const r = await run('tick', '--handlers', path.join(FIXTURES, 'handlers.ts'), '--alert', 'unhandled:type=orphan-type', '--alert-webhook', receiver.url, '--max-seconds', '20');
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(receiver.received.map((n) => [n.rule, n.state, n.episode, n.value]), [['unhandled:type:orphan-type', 'firing', 1, 1]]);
    const fired = logLines(r.stdout).filter((l) => l.event === 'alert.firing');
    assert.deepEqual(fired.map((l) => [l.rule, l.msg]), [['unhandled:type:orphan-type', 'FIRING: 1 due job(s) of type orphan-type that no live worker handles']]);
    await withDb(t.file, async (s) => {
      const [job] = await s.jobs.list({ type: ALERT_WEBHOOK_TYPE, limit: 10 });
      assert.equal(job?.status, 'succeeded');
    });
  });
});
