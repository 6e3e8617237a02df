/**
 * expectEnqueued / expectNotEnqueued (leasehold/testing): a payload matches when it contains
 * every field given; a miss throws node:assert's AssertionError, saying what was enqueued.
 */
import assert from 'node:assert/strict';
import { AssertionError } from 'node:assert';
import { describe, test } from 'node:test';
import { defineJob } from '../../src/index.js';
import { createTestApp, expectEnqueued, expectNotEnqueued } from '../../src/testing/index.js';

const sendEmail = defineJob({ type: 'send-email', handler: (_p: { to: string; subject: string; tags?: string[] }) => {} });
const audit = defineJob({ type: 'audit', handler: () => {} });

describe('expectEnqueued', () => {
  test('matches a job of the type whose payload contains the fields given', async () => {
    const t = createTestApp({ jobs: [sendEmail, audit] });
    await t.client.enqueue('send-email', { to: 'a@x', subject: 'hi', tags: ['new', 'eu'] });
    await t.client.enqueue('send-email', { to: 'b@x', subject: 'hi' });
    await t.client.enqueue('audit', { to: 'c@x' });

    const [job] = await expectEnqueued(t, 'send-email', { to: 'a@x' });
    assert.deepEqual(job?.payload, { to: 'a@x', subject: 'hi', tags: ['new', 'eu'] });
    await expectEnqueued(t, 'send-email', { tags: ['new', 'eu'] });
    assert.equal((await expectEnqueued(t, 'send-email')).length, 2);
    await expectEnqueued(t, 'send-email', { subject: 'hi' }, { count: 2 });
    await expectNotEnqueued(t, 'send-email', { to: 'c@x' });
    await expectNotEnqueued(t, 'send-email', { to: 'a@x', subject: 'bye' });
    await t.close();
  });

  test('a miss throws an AssertionError naming what was enqueued', async () => {
    const t = createTestApp({ jobs: [sendEmail, audit] });
    await t.client.enqueue('send-email', { to: 'a@x', subject: 'hi' });

    const miss = await expectEnqueued(t, 'send-email', { to: 'z@x' }).then(() => null, (e: unknown) => e);
    assert.ok(miss instanceof AssertionError, 'an AssertionError');
    assert.match(miss.message, /expected a send-email job with a payload containing \{"to":"z@x"\} to be enqueued; found 0 matching of 1 send-email job/);
    assert.deepEqual(miss.actual, [{ status: 'queued', payload: { to: 'a@x', subject: 'hi' } }]);

    await assert.rejects(expectEnqueued(t, 'audit'), AssertionError);
    await assert.rejects(expectEnqueued(t, 'send-email', { to: 'a@x' }, { count: 2 }), /expected 2 × a send-email job/);
    await assert.rejects(expectEnqueued(t, 'send-email', { to: 'a@x' }, { status: 'succeeded' }), /\(status succeeded\)/);
    await assert.rejects(expectNotEnqueued(t, 'send-email', { to: 'a@x' }), (e: unknown) => e instanceof AssertionError && /expected no send-email job with a payload containing \{"to":"a@x"\} to be enqueued; found 1/.test(e.message));
    await t.runUntilIdle();
    await expectEnqueued(t, 'send-email', { to: 'a@x' }, { status: 'succeeded' });
    await t.close();
  });
});
