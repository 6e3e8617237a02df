/**
 * Alerts in a cluster: two workers, each with its own connection and the same alert rules,
 * deliver exactly one firing and one resolved notification to a local HTTP receiver for a burst
 * of failures, and none at all while nothing is wrong. Only the holder of the alerts lock
 * evaluates; the webhook deliveries are jobs, in the history like any other.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ALERT_WEBHOOK_TYPE } from '../../src/core/index.js';
import type { AlertOptions } from '../../src/runtime/alert-evaluator.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { type Receiver, evaluators, rounds, useAlertHarness } from './alerts-support.js';
import { type Harness, STORAGE_KINDS, describeEachKind, waitFor } from './support.js';

await describeEachKind('alerts across two workers', STORAGE_KINDS, (kind) => {
  let h: Harness;
  let receiver: Receiver;
  useAlertHarness(kind, (opened) => ({ h, receiver } = opened));

  /** Two workers with these jobs and alerts, the second on a connection of its own. */
  async function twoWorkers(jobs: Parameters<Harness['worker']>[0], alerts: AlertOptions) {
    const a = await h.worker(jobs, { alerts });
    const b = await h.worker(jobs, { alerts, storage: await h.another() });
    return [a, b];
  }

  /** Wait until every given worker's evaluator ran `more` rounds beyond `from`. */
  async function moreRounds(ids: readonly string[], more: number, what: string) {
    const from = rounds(h.log);
    await waitFor(() => ids.every((id) => (rounds(h.log).get(id) ?? 0) >= (from.get(id) ?? 0) + more), 20_000, what);
  }

  const webhookJobs = async () => (await h.storage.queues.counts()).filter((c) => c.type === ALERT_WEBHOOK_TYPE);

  test('nothing wrong: the evaluator runs, and no notification is sent, no row written, no webhook job enqueued', async () => {
    const fine = defineJob({ type: 'fine', handler: () => undefined });
    const alerts: AlertOptions = {
      rules: [
        { kind: 'failureRate', windowMs: 60_000, above: 0.1, minAttempts: 1 },
        { kind: 'deadJobs', windowMs: 60_000 },
        { kind: 'stuckQueue', maxAgeMs: 60_000 },
        { kind: 'unhandled' },
      ],
      webhooks: [receiver.url],
      onAlert: (n) => assert.fail(`no notification expected; got ${n.summary}`),
      intervalMs: 30,
    };
    const workers = await twoWorkers([fine], alerts);
    const client = h.clientWith([fine]);
    const jobs = await Promise.all(Array.from({ length: 20 }, (_, i) => client.enqueue('fine', { i })));
    for (const j of jobs) await h.waitStatus(j.id, 'succeeded');
    // the rules were judged with these attempts in their window, several times
    await moreRounds(workers.map((w) => w.id), 5, 'five more evaluator rounds on each worker');
    // read before the stops: once the holder stops, the other worker takes the lock over
    const evaluatedBy = evaluators(h.log);
    for (const w of workers) await w.stop();

    assert.deepEqual(receiver.received, []);
    assert.deepEqual(await h.storage.alerts.list(), []);
    assert.deepEqual(await webhookJobs(), []);
    assert.equal(h.log.count('alert.firing') + h.log.count('alert.resolved'), 0);
    // one process evaluates (the lock's holder); the other stands by
    assert.equal(evaluatedBy.length, 1, `evaluated by ${evaluatedBy.join(', ')}`);
  });

  test('a burst of failures: the receiver gets exactly one firing and one resolved notification', async () => {
    const h0 = h.log.entries.length;
    const flaky = defineJob({ type: 'flaky', maxAttempts: 1, handler: () => Promise.reject(new Error('the mail server refused')) });
    const rule = { kind: 'failureRate', type: 'flaky', windowMs: 1_500, above: 0.5, minAttempts: 3 } as const;
    const workers = await twoWorkers([flaky], { rules: [rule], webhooks: [receiver.url], intervalMs: 30 });
    const ids = workers.map((w) => w.id);
    const client = h.clientWith([flaky]);

    // failures until the receiver hears of them: however the timers fall, the burst is in the window when judged
    await waitFor(async () => receiver.of('firing').length > 0 || void (await client.enqueue('flaky', {})), 30_000, 'a firing notification');
    // the failures stop; once the window has passed with none, the rule resolves
    await waitFor(() => receiver.of('resolved').length > 0, 30_000, 'a resolved notification');
    // every evaluator has had its say since, and every delivery has ended
    await moreRounds(ids, 3, 'three more evaluator rounds on each worker');
    await waitFor(async () => (await webhookJobs()).every((c) => c.status === 'succeeded'), 10_000, 'the webhook jobs to end');

    const name = 'failure-rate:type:flaky';
    assert.deepEqual(
      receiver.received.map((n) => [n.state, n.rule, n.episode, n.id]),
      [['firing', name, 1, `${name}#1`], ['resolved', name, 2, `${name}#2`]],
    );
    const [firing, resolved] = receiver.received;
    assert.equal(firing?.kind, 'failureRate');
    assert.ok((firing?.value ?? 0) > 0.5, `firing value ${firing?.value}`);
    assert.match(firing?.summary ?? '', /^FIRING: failure rate of type flaky over 1.5s: \d+(\.\d)? % \(fires above 50 %, from 3 attempts\)$/);
    assert.match(resolved?.summary ?? '', /^resolved: failure rate of type flaky over 1.5s: /);
    assert.ok(Date.parse(resolved?.since ?? '') > Date.parse(firing?.since ?? ''));

    const [row] = await h.storage.alerts.list();
    assert.deepEqual([row?.rule, row?.state, row?.episode], [name, 'ok', 2]);
    // one log line per incident and per resolve, from whichever process moved the rule
    assert.deepEqual([h.log.count('alert.firing'), h.log.count('alert.resolved')], [1, 1]);
    assert.equal(h.log.entries.slice(h0).filter((e) => e.event === 'alert.firing')[0]?.level, 40);
    // the deliveries are jobs: two, each succeeded on its first attempt, with its history
    const deliveries = await h.client.listJobs({ type: ALERT_WEBHOOK_TYPE });
    assert.equal(deliveries.length, 2);
    for (const job of deliveries) {
      assert.equal(job.status, 'succeeded');
      assert.deepEqual((await h.client.listAttempts(job.id)).map((a) => a.outcome), ['succeeded']);
      assert.match(job.idempotencyKey ?? '', new RegExp(`^alert:${name}:[12]:[0-9a-f]{16}$`));
    }
    for (const w of workers) await w.stop();
  });

  test('the lock moves on: when the evaluating worker stops, the other one evaluates', async () => {
    const idle = defineJob({ type: 'idle', handler: () => undefined });
    const from = h.log.entries.length;
    const workers = await twoWorkers([idle], { rules: [{ kind: 'unhandled' }], intervalMs: 30 });
    const evaluatedBy = () => [...new Set(h.log.entries.slice(from).filter((e) => e.event === 'alerts.evaluated').map((e) => String(e.workerId)))];
    const [holderId] = await waitFor(() => (evaluatedBy().length > 0 ? evaluatedBy() : null), 10_000, 'a first evaluation');
    const holder = workers.find((w) => w.id === holderId)!;
    const other = workers.find((w) => w !== holder)!;
    await holder.stop();
    await waitFor(() => evaluatedBy().includes(other.id), 10_000, 'the other worker to evaluate');
    await other.stop();
  });
});
