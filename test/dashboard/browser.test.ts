/**
 * The dashboard in a real browser (playwright-core driving Debian's /usr/bin/chromium; no
 * browser is ever downloaded): a SQLite database with jobs a real worker ran (one dead after
 * three failed attempts), open the overview, go to the dead job, click Retry, and check the
 * database says queued. A payload with <script> must not run. With UPDATE_SCREENSHOT=1 it
 * rewrites docs/dashboard.png, docs/dashboard-job.png and docs/dashboard-phone.png. Every page
 * fits a 390 px phone; signing out makes copied cookies worthless.
 *
 * No Chromium: the suite is SKIPPED loudly (reported at the end of `npm test`); it fails
 * instead when LEASEHOLD_REQUIRE_BROWSER=1 or LEASEHOLD_REQUIRE_DBS=all (CI).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import type { Browser } from 'playwright-core';
import type { Storage } from '../../src/core/storage.js';
import { serveDashboard } from '../../src/dashboard/index.js';
import type { RunningDashboard } from '../../src/dashboard/index.js';
import { Client } from '../../src/runtime/client.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { withOperatorApi } from '../../src/runtime/operator.js';
import { Worker } from '../../src/runtime/worker.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { upsertSchedule } from '../../src/runtime/scheduler.js';
import { launch, openPage, root, skipReason } from './browser-support.js';
import { TOKEN, XSS } from './support.js';

const skip = skipReason();
// the callbacks given to page.evaluate run in the page, where these exist (this program has no DOM types)
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const document: any;

describe('dashboard in a browser', { skip: skip ?? false }, () => {
  let dir: string;
  let storage: Storage;
  let client: Client;
  let worker: Worker | undefined;
  let dash: RunningDashboard;
  let guarded: RunningDashboard;
  let browser: Browser;
  let deadId: string;
  let xssId: string;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'leasehold-dash-'));
    storage = sqliteStorage({ path: path.join(dir, 'jobs.db') });
    await storage.migrate();
    const logger = pino({ level: 'silent' });
    const sendInvoice = defineJob({
      type: 'send-invoice-email',
      retry: { kind: 'exponential', baseMs: 40, factor: 2, maxMs: 200, jitter: 'none' },
      maxAttempts: 3,
      async handler(p: { invoiceId: string; to: string; bounce?: boolean }, ctx) {
        if (p.bounce) throw Object.assign(new Error(`SMTP 550: mailbox unavailable for ${p.to}`), { code: 'SMTP_550' });
        await new Promise((r) => setTimeout(r, 5 + Math.floor(Math.random() * 20)));
        await ctx.once(`invoice-email:${p.invoiceId}`, () => `msg-${p.invoiceId}`);
      },
    });
    const report = defineJob({ type: 'daily-report', handler: async () => {} });
    client = new Client({ storage });
    for (let i = 1; i <= 12; i++) {
      const invoiceId = `INV-${String(i).padStart(4, '0')}`;
      const j = await client.enqueue('send-invoice-email', { invoiceId, to: `customer${i}@example.com`, ...(i === 7 ? { bounce: true } : {}) }, { maxAttempts: 3 });
      if (i === 7) deadId = j.id;
    }
    await client.enqueue('daily-report', { day: '2026-03-14' });
    await client.enqueue('daily-report', { day: '2026-03-15' }, { delayMs: 6 * 3_600_000 });
    xssId = (await client.enqueue('import-contacts', { file: 'contacts.csv', note: XSS }, { delayMs: 3_600_000, queue: 'imports' })).id;

    const first = new Worker({ storage, jobs: [sendInvoice, report], concurrency: 4, pollIntervalMs: 10, sweeper: false, logger, workerId: 'web-1:invoices' });
    await first.start();
    const until = Date.now() + 15_000;
    while ((await client.getJob(deadId)).status !== 'dead' || (await client.listJobs({ status: 'queued', type: 'send-invoice-email', limit: 1 })).length > 0) {
      if (Date.now() > until) throw new Error('seeding did not finish');
      await new Promise((r) => setTimeout(r, 20));
    }
    await first.stop({ deadlineMs: 2_000 });
    // A live worker that does not handle invoices: a retried invoice then stays queued.
    worker = new Worker({ storage, jobs: [report], concurrency: 2, pollIntervalMs: 50, sweeper: false, logger, workerId: 'web-2:reports' });
    await worker.start();
    await upsertSchedule(storage, { name: 'nightly-invoice-reminders', cron: '30 2 * * *', timezone: 'Europe/Warsaw', type: 'send-invoice-email', payload: {} });
    await storage.locks.acquire({ name: 'monthly-statement-export', owner: 'web-1:invoices pid 4242', ttlMs: 600_000, slots: 1 });
    dash = await serveDashboard({ client: withOperatorApi(client), port: 0, host: '127.0.0.1' });
    guarded = await serveDashboard({ client: withOperatorApi(client), port: 0, host: '127.0.0.1', token: TOKEN });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await dash?.close();
    await guarded?.close();
    await worker?.stop({ deadlineMs: 1_000 });
    await storage?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('open the overview, find the dead job, click Retry: the job is queued', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.goto(dash.url);
    assert.equal(await page.title(), 'Overview · leasehold');
    await page.getByText('web-2:reports').waitFor();
    if (process.env.UPDATE_SCREENSHOT === '1') await page.screenshot({ path: path.join(root, 'docs/dashboard.png'), fullPage: true });

    await page.getByRole('navigation').getByRole('link', { name: 'Dead' }).click();
    await page.waitForURL(/status=dead/);
    await page.getByRole('link', { name: deadId, exact: true }).click();
    await page.waitForURL(new RegExp(`/jobs/${deadId}$`));
    assert.ok((await page.locator('body').innerText()).includes('SMTP 550: mailbox unavailable for customer7@example.com'));
    assert.equal(await page.locator('table').nth(0).locator('tbody tr').count(), 3, 'three attempts listed');
    if (process.env.UPDATE_SCREENSHOT === '1') await page.screenshot({ path: path.join(root, 'docs/dashboard-job.png'), fullPage: true });

    await page.getByRole('button', { name: 'Retry' }).click();
    await page.waitForURL(/done=retried/);
    await page.getByText('The job is due now').waitFor();
    const job = await client.getJob(deadId);
    assert.equal(job.status, 'queued');
    assert.equal(job.attempts, 0);

    // attacker-controlled payload: shown as text, never run
    await page.goto(`${dash.url}jobs/${xssId}`);
    assert.ok((await page.locator('pre').first().innerText()).includes(XSS));
    assert.deepEqual(await page.locator('script').evaluateAll((els) => els.map((e) => e.getAttribute('src') ?? 'inline')), [await page.locator('script').first().getAttribute('src')]);
    assert.match((await page.locator('script').first().getAttribute('src')) ?? '', /^\/assets\/dashboard-[0-9a-f]{12}\.js$/);
    assert.deepEqual(dialogs, []);
    await page.close();
  });

  test('every page fits a 390 px wide phone: no horizontal scroll', async () => {
    const { page, problems } = await openPage(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    for (const p of ['', 'jobs', 'jobs?status=dead', `jobs/${deadId}`, `jobs/${xssId}`, 'queues', 'schedules', 'locks', 'workers']) {
      await page.goto(`${dash.url}${p}`);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 390, `/${p} is ${width} px wide`);
    }
    await page.goto(`${dash.url}jobs`);
    if (process.env.UPDATE_SCREENSHOT === '1') await page.screenshot({ path: path.join(root, 'docs/dashboard-phone.png'), fullPage: false });
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('sign in, sign out: the cookies copied before sign-out are refused after it', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(guarded.url);
    await page.waitForURL(/\/login\?next=/);
    await page.getByLabel('Dashboard token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    const copied = await page.context().cookies();
    assert.deepEqual(copied.map((c) => c.name).sort(), ['leasehold_auth', 'leasehold_sid']);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/login$/);

    const replay = await browser.newContext();
    await replay.addCookies(copied);
    const again = await replay.newPage();
    await again.goto(guarded.url);
    await again.waitForURL(/\/login\?next=/);
    assert.equal((await replay.request.get(`${guarded.url}api/overview`)).status(), 401);
    assert.deepEqual(problems, []);
    await replay.close();
    await page.context().close();
  });
});
