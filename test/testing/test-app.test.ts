/**
 * createTestApp (leasehold/testing): the real worker on the memory storage with a clock the
 * test moves. Retries run without waiting (the clock jumps to them); delayed jobs and schedules
 * wait until the test moves the clock.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defineJob } from '../../src/index.js';
import { createTestApp } from '../../src/testing/index.js';

const START = Date.UTC(2030, 0, 1, 12, 0, 0);

describe('createTestApp', () => {
  test('enqueued jobs run until idle, including the jobs their handlers enqueue', async () => {
    const seen: string[] = [];
    const signup = defineJob({
      type: 'signup',
      handler: async (p: { email: string }) => {
        seen.push(`signup ${p.email}`);
        await t.client.enqueue('welcome', { to: p.email });
      },
    });
    const welcome = defineJob({ type: 'welcome', handler: (p: { to: string }) => void seen.push(`welcome ${p.to}`) });
    const t = createTestApp({ jobs: [signup, welcome], now: START });
    await t.client.enqueue('signup', { email: 'a@example.com' });
    const report = await t.runUntilIdle();
    assert.deepEqual(report, { processed: 2, outcomes: { succeeded: 2 } });
    assert.deepEqual(seen, ['signup a@example.com', 'welcome a@example.com']);
    assert.deepEqual((await t.enqueued()).map((j) => [j.type, j.status]), [['signup', 'succeeded'], ['welcome', 'succeeded']]);
    assert.deepEqual((await t.enqueued('welcome')).map((j) => j.payload), [{ to: 'a@example.com' }]);
    await t.close();
  });

  test('a failing job is retried at once: the clock jumps over its backoff', async () => {
    let calls = 0;
    const flaky = defineJob({
      type: 'flaky',
      maxAttempts: 5,
      retry: { kind: 'fixed', delayMs: 3_600_000 },
      handler: () => {
        if (++calls < 3) throw new Error(`down ${calls}`);
      },
    });
    const t = createTestApp({ jobs: [flaky], now: START });
    await t.client.enqueue('flaky', {});
    assert.deepEqual(await t.runUntilIdle(), { processed: 3, outcomes: { failed: 2, succeeded: 1 } });
    const [job] = await t.enqueued('flaky');
    assert.deepEqual([job?.status, job?.attempts], ['succeeded', 3]);
    assert.equal(t.clock.now(), START + 2 * 3_600_000, 'the clock moved by the two backoffs');
    await t.close();
  });

  test('skipBackoff: false leaves the retry waiting; a job out of attempts is dead', async () => {
    const broken = defineJob({
      type: 'broken',
      maxAttempts: 2,
      handler: () => {
        throw new Error('always');
      },
    });
    const t = createTestApp({ jobs: [broken], now: START });
    await t.client.enqueue('broken', {});
    assert.deepEqual(await t.runUntilIdle({ skipBackoff: false }), { processed: 1, outcomes: { failed: 1 } });
    assert.equal((await t.enqueued('broken'))[0]?.status, 'failed');
    assert.equal(t.clock.now(), START);
    assert.deepEqual(await t.runUntilIdle(), { processed: 1, outcomes: { dead: 1 } });
    assert.equal((await t.enqueued('broken'))[0]?.status, 'dead');
    await t.close();
  });

  test('a delayed job waits for the clock', async () => {
    let ran = 0;
    const later = defineJob({ type: 'later', handler: () => void ran++ });
    const t = createTestApp({ jobs: [later], now: START });
    await t.client.enqueue('later', {}, { delayMs: 60_000 });
    assert.deepEqual(await t.runUntilIdle(), { processed: 0, outcomes: {} });
    t.clock.advance(59_999);
    await t.runUntilIdle();
    assert.equal(ran, 0);
    t.clock.advance(1);
    await t.runUntilIdle();
    assert.equal(ran, 1);
    assert.throws(() => t.clock.set(START), /only moves forward/);
    await t.close();
  });

  test('schedules fire as the clock passes their slots', async () => {
    const fired: unknown[] = [];
    const report = defineJob({ type: 'report', handler: (p: { kind: string }) => void fired.push(p.kind) });
    const t = createTestApp({ jobs: [report], now: START, schedules: [{ name: 'hourly', type: 'report', everyMs: 3_600_000, payload: { kind: 'hourly' } }] });
    await t.runUntilIdle();
    assert.deepEqual(fired, []);
    t.clock.advance(3_600_000);
    await t.runUntilIdle();
    assert.deepEqual(fired, ['hourly']);
    assert.equal((await t.enqueued('report'))[0]?.scheduleName, 'hourly');
    await t.close();
  });

  test('a job that never stops failing, and one that never stops running, end runUntilIdle with an error', async () => {
    const forever = defineJob({
      type: 'forever',
      maxAttempts: 1_000,
      handler: () => {
        throw new Error('again');
      },
    });
    const t = createTestApp({ jobs: [forever], now: START });
    await t.client.enqueue('forever', {});
    await assert.rejects(t.runUntilIdle({ maxRounds: 5 }), /still retrying after 5 rounds/);
    assert.equal((await t.enqueued('forever'))[0]?.attempts, 5);
    await t.close();

    const stuck = defineJob({ type: 'stuck', handler: (_p: object, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', resolve)) });
    const s = createTestApp({ jobs: [stuck], now: START, worker: { abortGraceMs: 50 } });
    await s.client.enqueue('stuck', {});
    await assert.rejects(s.runUntilIdle({ maxMs: 200 }), /still running after 200 ms/);
    await s.close();
  });
});
