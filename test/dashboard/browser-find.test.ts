/**
 * Finding and acting in a real browser (playwright-core driving Debian's Chromium, see
 * browser-support.ts): search by idempotency key prefix and by payload text from the jobs page's
 * form, retry a filtered set of dead jobs in bulk through the dialog with its count (the database says
 * they are queued, jobs outside the filter are not, and each job's history names who did it),
 * and the charts page at 390 px, its time axes in UTC or the browser's zone. With UPDATE_SCREENSHOT=1 it rewrites docs/dashboard-search.png
 * docs/dashboard-history.png and docs/dashboard-charts.png.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import type { Storage } from '../../src/core/storage.js';
import type { RunningDashboard } from '../../src/dashboard/index.js';
import { serveDashboard } from '../../src/dashboard/index.js';
import { Client } from '../../src/runtime/client.js';
import { withOperatorApi } from '../../src/runtime/operator.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { launch, openPage, root, skipReason } from './browser-support.js';

const skip = skipReason();
// the callbacks given to page.evaluate run in the page, where this exists (this program has no DOM types)
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const document: any;
const shots = process.env.UPDATE_SCREENSHOT === '1';

describe('dashboard in a browser: find and act', { skip: skip ?? false }, () => {
  let dir: string;
  let storage: Storage;
  let client: Client;
  let dash: RunningDashboard;
  let browser: Browser;
  const keyed: string[] = [];
  const deadImports: string[] = [];
  let deadMail: string;
  let customer3: string;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'leasehold-dash-find-'));
    storage = sqliteStorage({ path: path.join(dir, 'jobs.db') });
    await storage.migrate();
    client = new Client({ storage });
    for (let i = 1; i <= 6; i++) {
      const j = await client.enqueue('send-invoice-email', { to: `customer${i}@example.com` }, { idempotencyKey: `invoice-${i <= 3 ? 7 : 8}00${i}` });
      if (i <= 3) keyed.push(j.id);
      if (i === 3) customer3 = j.id;
    }
    for (let i = 1; i <= 3; i++) deadImports.push((await client.enqueue('import-row', { row: i }, { queue: 'imports', maxAttempts: 1 })).id);
    deadMail = (await client.enqueue('send-reminder', { to: 'x@example.com' }, { maxAttempts: 1 })).id;
    // run them without a worker: the imports and the reminder die, the invoices succeed
    const claimed = await storage.leases.claim({ workerId: 'web-1', types: ['send-invoice-email', 'import-row', 'send-reminder'], queues: null, limit: 50, leaseMs: 30_000 });
    const error = { code: 'ROW_INVALID', message: 'row has no email column' };
    await storage.leases.finish({ items: claimed.map((j) => (j.type === 'send-invoice-email'
      ? { id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } }
      : { id: j.id, leaseToken: j.leaseToken, status: 'dead' as const, error, attempt: { outcome: 'dead' as const, error } })) });
    dash = await serveDashboard({ client: withOperatorApi(client), port: 0, host: '127.0.0.1', pollMs: 0 });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await dash?.close();
    await storage?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const rowIds = (page: import('playwright-core').Page) => page.locator('table[data-table="jobs"] tbody td[data-label="Id"] a').allInnerTexts();

  test('search by idempotency key prefix, then by payload text', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${dash.url}jobs`);
    await page.getByLabel('Idempotency key').fill('invoice-7*');
    await page.getByLabel('Idempotency key').press('Enter');
    await page.waitForURL(/key=invoice-7/);
    assert.deepEqual(await rowIds(page), [...keyed].reverse());
    await page.getByText('3 jobs match').waitFor();

    await page.goto(`${dash.url}jobs`);
    await page.keyboard.press('/');
    await page.keyboard.type('customer3@');
    await page.keyboard.press('Enter');
    await page.waitForURL(/q=customer3/);
    assert.deepEqual(await rowIds(page), [customer3]);
    if (shots) await page.screenshot({ path: path.join(root, 'docs/dashboard-search.png'), fullPage: true });
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('bulk retry of a filtered set: the dead imports become queued, the other dead job stays', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${dash.url}jobs?status=dead&type=import-row`);
    // with the script the question is a dialog, with the count from the server
    await page.getByRole('button', { name: 'Retry…' }).click();
    const dialog = page.locator('dialog.confirm');
    await dialog.waitFor();
    assert.match(await dialog.locator('p').innerText(), /^Retry 3 jobs matching status dead, type import-row\? /);
    await dialog.getByRole('button', { name: 'Retry 3 jobs' }).click();
    await page.waitForURL(/done=retry/);
    await page.getByText('3 jobs retried.').waitFor();
    for (const id of deadImports) assert.equal((await client.getJob(id)).status, 'queued', `job ${id}`);
    assert.equal((await client.getJob(deadMail)).status, 'dead');

    await page.goto(`${dash.url}jobs/${deadImports[0]}`);
    const marker = await page.locator('td.event[data-label="Event"]').innerText();
    assert.match(marker, /^retried by dashboard:session-[0-9a-f]{8} from 127\.0\.0\.1 at .+, after 1 attempt \(was dead\) · bulk bulk-/);
    if (shots) await page.locator('table[data-table="attempts"]').screenshot({ path: path.join(root, 'docs/dashboard-history.png') });
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('the charts fit a 390 px phone', async () => {
    const { page, problems } = await openPage(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    await page.goto(`${dash.url}charts`);
    assert.equal(await page.locator('svg.chart').count(), 4);
    assert.equal(await page.locator('svg.chart title').first().textContent(), 'Throughput by outcome, last hour: 10 attempts');
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 390, `/charts is ${width} px wide`);
    for (const box of await page.locator('svg.chart').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().right))) assert.ok(box <= 390, `a chart reaches ${box} px`);
    if (shots) await page.screenshot({ path: path.join(root, 'docs/dashboard-charts.png'), fullPage: true });
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('the charts\' time axes follow the UTC / local toggle', async () => {
    const { page, problems } = await openPage(browser, { timezoneId: 'Asia/Kolkata' });
    await page.goto(`${dash.url}charts?range=week`);
    const last = page.locator('svg.chart text[data-zone]').first();
    const first = page.locator('svg.chart text[data-at]').first();
    const at = new Date((await first.getAttribute('data-at'))!);
    const utc = await last.textContent();
    assert.match(utc!, /^\d\d-\d\d \d\d:\d\d UTC$/, 'a week: date and time, in UTC');
    await page.getByRole('button', { name: 'Times: UTC' }).click();
    await page.getByRole('button', { name: 'Times: local' }).waitFor();
    assert.match((await last.textContent())!, /^\d\d-\d\d \d\d:\d\d GMT\+5:30$/);
    // India is 5 h 30 min ahead of UTC
    const shifted = new Date(at.getTime() + 5.5 * 3_600_000).toISOString();
    assert.equal(await first.textContent(), `${shifted.slice(5, 10)} ${shifted.slice(11, 16)}`);
    assert.match((await page.locator('details table time').first().textContent())!, /GMT\+5:30$/, 'the numbers beside the chart too');
    await page.reload();
    assert.match((await last.textContent())!, /GMT\+5:30$/, 'the choice is kept');
    await page.getByRole('button', { name: 'Times: local' }).click();
    await page.getByRole('button', { name: 'Times: UTC' }).waitFor();
    assert.equal(await last.textContent(), utc);
    assert.deepEqual(problems, []);
    await page.context().close();
  });
});
