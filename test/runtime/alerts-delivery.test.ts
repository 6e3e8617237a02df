/**
 * The alert evaluator's guarantees, driven by hand (evaluate() without the timer): two
 * evaluators that decided from the same read notify once (the transition's compare-and-set); a
 * crash between a transition and its webhook enqueue is healed by the next evaluation without a
 * second delivery; each rule kind fires through the callback and the log; and the webhook job
 * retries a failing receiver and gives up on one that refuses.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AlertNotification, AlertRule } from '../../src/core/index.js';
import { ALERT_WEBHOOK_TYPE, ValidationError } from '../../src/core/index.js';
import type { Storage } from '../../src/core/storage.js';
import { AlertEvaluator } from '../../src/runtime/alert-evaluator.js';
import { alertWebhookJob } from '../../src/runtime/alert-webhook.js';
import { Client } from '../../src/runtime/client.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Worker } from '../../src/runtime/worker.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { Receiver, useAlertHarness, withTransition } from './alerts-support.js';
import { type Harness, LogCapture, STORAGE_KINDS, deferred, describeEachKind, overriding, waitFor } from './support.js';

await describeEachKind('the alert evaluator', STORAGE_KINDS, (kind) => {
  let h: Harness;
  let receiver: Receiver;
  useAlertHarness(kind, (opened) => ({ h, receiver } = opened));

  const evaluator = (storage: Storage, rules: AlertRule[], heard: AlertNotification[] = [], webhooks = [receiver.url]) =>
    new AlertEvaluator({ storage, rules, webhooks, onAlert: (n) => void heard.push(n), logger: h.log.logger });

  test('two evaluators that decided from the same read: one transition lands, one notification, one webhook job', async () => {
    // an orphan job (no worker handles its type) makes the rule hold for both
    await h.client.enqueue('orphan', {});
    const both = deferred();
    let arrived = 0;
    const gated = (s: Storage) =>
      withTransition(s, async (_p, land) => {
        if (++arrived === 2) both.resolve();
        await both.promise;
        return land();
      });
    const heard: AlertNotification[] = [];
    const rules: AlertRule[] = [{ kind: 'unhandled', name: 'nobody-home' }];
    const [one, two] = [evaluator(gated(h.storage), rules, heard), evaluator(gated(await h.another()), rules, heard)];
    const landed = (await Promise.all([one.evaluate(), two.evaluate()])).flat();

    assert.equal(arrived, 2, 'both evaluators tried the transition');
    assert.deepEqual(landed.map((n) => [n.rule, n.state, n.episode, n.value]), [['nobody-home', 'firing', 1, 1]]);
    assert.deepEqual(heard.map((n) => n.id), ['nobody-home#1']);
    assert.equal(h.log.count('alert.firing'), 1);
    const [row] = await h.storage.alerts.list();
    assert.deepEqual([row?.state, row?.episode], ['firing', 1]);
    // the next evaluation of either enqueues the notification again: found by its key, still one job
    await Promise.all([one.evaluate(), two.evaluate()]);
    assert.equal((await h.client.listJobs({ type: ALERT_WEBHOOK_TYPE })).length, 1);
  });

  test('a crash between the transition and the webhook enqueue is healed by the next evaluation, delivered once', async () => {
    await h.client.enqueue('lost-type', {}, { queue: 'elsewhere' });
    const rules: AlertRule[] = [{ kind: 'unhandled', name: 'lost', queue: 'elsewhere' }];
    let crash = true;
    const crashing = overriding(h.storage, 'jobs', 'insert', (insert) => (p) => (crash ? Promise.reject(new Error('process died here')) : insert(p)));
    await assert.rejects(evaluator(crashing, rules).evaluate(), /process died here/);
    assert.deepEqual((await h.storage.alerts.list()).find((r) => r.rule === 'lost')?.episode, 1);
    assert.equal(receiver.received.length, 0);

    crash = false;
    const next = evaluator(await h.another(), rules);
    assert.deepEqual(await next.evaluate(), [], 'nothing moved: the rule already fires');
    await next.evaluate();
    const w = await h.worker([alertWebhookJob]);
    await waitFor(() => receiver.received.find((n) => n.rule === 'lost'), 10_000, 'the healed delivery');
    await waitFor(async () => (await h.client.listJobs({ type: ALERT_WEBHOOK_TYPE })).every((j) => j.status === 'succeeded'), 10_000, 'deliveries to end');
    await w.stop();
    assert.deepEqual(receiver.received.filter((n) => n.rule === 'lost').map((n) => [n.state, n.episode]), [['firing', 1]]);
  });

  test('each rule kind fires through the callback and the log: dead jobs, a stuck queue, jobs no worker handles', async () => {
    const doomed = defineJob({ type: 'doomed', maxAttempts: 1, queue: 'mail', handler: () => Promise.reject(new Error('no')) });
    const job = await h.clientWith([doomed]).enqueue('doomed', {});
    await h.client.enqueue('pdf', {}, { queue: 'reports' });
    const w = await h.worker([doomed], { queues: ['mail'] });
    await h.waitStatus(job.id, 'dead');
    await w.stop();
    const heard: AlertNotification[] = [];
    const e = evaluator(h.storage, [
      { kind: 'deadJobs', type: 'doomed', windowMs: 600_000 },
      { kind: 'stuckQueue', queue: 'reports', maxAgeMs: 1 },
      { kind: 'unhandled', type: 'pdf' },
      { kind: 'failureRate', queue: 'reports', windowMs: 600_000, above: 0 },
    ], heard, []);
    const logged = h.log.entries.length;
    await waitFor(async () => (await e.evaluate(), heard.length >= 3), 10_000, 'three rules to fire');
    const byRule = new Map(heard.map((n) => [n.rule, n]));
    // the failure rate of a queue without attempts is not judged: it does not fire
    assert.deepEqual([...byRule.keys()].sort(), ['dead:type:doomed', 'stuck:queue:reports', 'unhandled:type:pdf']);
    assert.deepEqual([byRule.get('dead:type:doomed')?.value, byRule.get('unhandled:type:pdf')?.value], [1, 1]);
    assert.ok((byRule.get('stuck:queue:reports')?.value ?? 0) > 1);
    assert.match(byRule.get('stuck:queue:reports')?.summary ?? '', /^FIRING: oldest due job in queue reports: waiting \S+ \(fires above 1ms\)$/);
    const lines = h.log.entries.slice(logged).filter((l) => l.event === 'alert.firing');
    assert.deepEqual(lines.map((l) => [l.rule, l.level]).sort(), [['dead:type:doomed', 40], ['stuck:queue:reports', 40], ['unhandled:type:pdf', 40]]);
  });
});

describe('alert webhook jobs (memory)', () => {
  const fastRetry: typeof alertWebhookJob = { ...alertWebhookJob, retry: { kind: 'fixed', delayMs: 20 } };
  const logger = new LogCapture().logger;

  async function deliver(status: (nth: number) => number) {
    const receiver = await Receiver.start((_n, nth) => status(nth));
    const storage = memoryStorage();
    await storage.migrate();
    await new Client({ storage }).enqueue('orphan', {});
    await new AlertEvaluator({ storage, rules: [{ kind: 'unhandled' }], webhooks: [receiver.url], logger }).evaluate();
    const worker = new Worker({ storage, jobs: [fastRetry], pollIntervalMs: 10, sweeper: false, scheduler: false, logger });
    await worker.start();
    const [job] = await storage.jobs.list({ type: ALERT_WEBHOOK_TYPE, limit: 10 });
    const done = await waitFor(async () => {
      const j = await storage.jobs.get({ id: job!.id });
      return j && (j.status === 'succeeded' || j.status === 'dead') ? j : null;
    }, 10_000, 'the delivery to end');
    const attempts = await storage.attempts.list({ jobId: job!.id });
    await worker.stop();
    await storage.close();
    await receiver.close();
    return { done, attempts, received: receiver.received };
  }

  test('a receiver that fails (5xx) is tried again until it answers 2xx', async () => {
    const { done, attempts, received } = await deliver((nth) => (nth < 3 ? 503 : 204));
    assert.equal(done.status, 'succeeded');
    // enqueued with the webhook job's own policies
    assert.deepEqual([done.maxAttempts, done.timeoutMs], [12, 30_000]);
    assert.deepEqual(attempts.map((a) => [a.outcome, a.errorCode]), [['failed', 'HTTP_503'], ['failed', 'HTTP_503'], ['succeeded', null]]);
    // the message names the receiver without its query (a token may ride there)
    assert.match(attempts[0]?.errorMessage ?? '', /^webhook http:\/\/127\.0\.0\.1:\d+\/hooks\/alerts answered 503: ok$/);
    assert.equal(received.length, 3);
    assert.deepEqual(new Set(received.map((n) => n.id)).size, 1);
  });

  test('a receiver that refuses (4xx) ends the delivery at once, dead, the answer in its history', async () => {
    const { done, attempts } = await deliver(() => 404);
    assert.equal(done.status, 'dead');
    assert.deepEqual(attempts.map((a) => a.outcome), ['dead']);
    assert.match(attempts[0]?.errorMessage ?? '', /answered 404/);
  });
});

describe('alert options (memory)', () => {
  const job = defineJob({ type: 'work', handler: () => undefined });
  const storage = memoryStorage();

  test('the webhook job is registered with a worker that has webhooks, and only then', () => {
    assert.deepEqual(new Worker({ storage, jobs: [job], alerts: { rules: [], webhooks: ['https://hooks.example.com/a'] } }).registry.types, ['work', ALERT_WEBHOOK_TYPE]);
    assert.deepEqual(new Worker({ storage, jobs: [job], alerts: { rules: [{ kind: 'unhandled' }] } }).registry.types, ['work']);
    assert.deepEqual(new Worker({ storage, jobs: [job] }).registry.types, ['work']);
  });

  test('bad rules, webhooks and intervals are refused by the constructor', () => {
    const refused = (alerts: ConstructorParameters<typeof Worker>[0]['alerts'], pattern: RegExp) =>
      assert.throws(() => new Worker({ storage, jobs: [job], alerts }), (e: Error) => e instanceof ValidationError && pattern.test(e.message));
    refused({ rules: [{ kind: 'failureRate', windowMs: 1000, above: 2 }] }, /above must be a ratio/);
    refused({ rules: [], webhooks: ['ftp://x'] }, /alert webhook must be an http\(s\) URL; got "ftp:\/\/x"/);
    refused({ rules: [], webhooks: ['not a url'] }, /http\(s\) URL/);
    refused({ rules: [], intervalMs: 5 }, /intervalMs must be an integer >= 10/);
  });
});
