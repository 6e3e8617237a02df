/**
 * The dashboard in a real browser (playwright-core driving Debian's /usr/bin/chromium; no
 * browser is ever downloaded): a SQLite database with jobs a real worker ran (one dead after
 * three failed attempts), open the overview, go to the dead job, click Retry, and check the
 * database says queued. A payload with <script> must not run. With UPDATE_SCREENSHOT=1 it
 * rewrites docs/dashboard.png and docs/dashboard-job.png.
 *
 * No Chromium: the suite is SKIPPED loudly (reported at the end of `npm test`); it fails
 * instead when LEASEHOLD_REQUIRE_BROWSER=1 or LEASEHOLD_REQUIRE_DBS=all (CI).
 */
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import type { Browser } from 'playwright-core';
import { chromium } from 'playwright-core';
import type { Storage } from '../../src/core/storage.js';
import { serveDashboard } from '../../src/dashboard/index.js';
import type { RunningDashboard } from '../../src/dashboard/index.js';
import { Client } from '../../src/runtime/client.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Worker } from '../../src/runtime/worker.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { XSS } from './support.js';

const CHROMIUM = process.env.LEASEHOLD_CHROMIUM ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'];
const required = process.env.LEASEHOLD_REQUIRE_BROWSER === '1' || (process.env.LEASEHOLD_REQUIRE_DBS ?? '').split(',').includes('all');
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

function skipReason(): string | null {
  if (existsSync(CHROMIUM)) return null;
  const msg = `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set LEASEHOLD_CHROMIUM)`;
  if (required) throw new Error(`dashboard browser test: ${msg}, and CI requires it`);
  const line = `SKIPPED dashboard browser test: ${msg}.`;
  process.stderr.write(`\n!!! ${line}\n\n`);
  if (process.env.LEASEHOLD_SKIP_REPORT) appendFileSync(process.env.LEASEHOLD_SKIP_REPORT, `${line}\n`);
  return line;
}

const skip = skipReason();

describe('dashboard in a browser', { skip: skip ?? false }, () => {
  let dir: string;
  let storage: Storage;
  let client: Client;
  let worker: Worker | undefined;
  let dash: RunningDashboard;
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
    dash = await serveDashboard({ client, port: 0, host: '127.0.0.1' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  });

  after(async () => {
    await browser?.close();
    await dash?.close();
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
});
