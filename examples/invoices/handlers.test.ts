// The example app's handlers under leasehold/testing (docs/testing.md); `npm test` runs it.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { createTestApp, expectEnqueued, runJob } from '../../src/testing/index.js';
import { jobs, sendInvoiceEmail } from './handlers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-invoices-'));
const sent = () => readFileSync(process.env.OUTBOX as string, 'utf8').trim().split('\n');
before(() => void (process.env.OUTBOX = path.join(dir, 'outbox.log')));
after(() => rmSync(dir, { recursive: true, force: true }));

test('one attempt: a flaky provider fails the first attempt, which will be retried', async () => {
  const run = await runJob(sendInvoiceEmail, { invoiceId: 'inv-1', to: 'a@example.com', amountCents: 100, flaky: 1 });
  assert.equal(run.status, 'failed');
  assert.match(run.errorInfo?.message ?? '', /mail provider unavailable/);
  assert.deepEqual(run.once, [], 'nothing was sent');
});

test('the app: an invoice email is retried until it goes out, once', async () => {
  const t = createTestApp({ jobs });
  await t.client.enqueue('send-invoice-email', { invoiceId: 'inv-2', to: 'b@example.com', amountCents: 250, flaky: 2 });
  const report = await t.runUntilIdle(); // the two retries run at once: the test clock skips their backoff
  assert.deepEqual(report.outcomes, { failed: 2, succeeded: 1 });
  await expectEnqueued(t, 'send-invoice-email', { invoiceId: 'inv-2' }, { status: 'succeeded' });
  assert.equal(sent().filter((line) => line.includes('inv-2')).length, 1);
  await t.close();
});
