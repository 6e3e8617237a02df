/**
 * The dashboard in a real browser, live: a count and the job list follow an enqueue made by
 * another process (the CLI on the same SQLite file) without a reload, and pause while the tab
 * is hidden; Pause and Resume on the queues page are obeyed by a running worker; a schedule's
 * Run now makes a job the worker runs, seen finishing on its page; Cancel asks in a dialog; the
 * theme toggle and prefers-color-scheme; times in the browser's zone; keyboard shortcuts. Any
 * console error (a CSP or Trusted Types violation included) fails the test.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import type { Browser } from 'playwright-core';
import type { Storage } from '../../src/core/storage.js';
import { serveDashboard } from '../../src/dashboard/index.js';
import type { RunningDashboard } from '../../src/dashboard/index.js';
import { Client } from '../../src/runtime/client.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { withOperatorApi } from '../../src/runtime/operator.js';
import { upsertSchedule } from '../../src/runtime/scheduler.js';
import { Worker } from '../../src/runtime/worker.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { waitFor } from '../runtime/support.js';
import { launch, openPage, root, skipReason } from './browser-support.js';

const skip = skipReason();
// the callbacks given to page.evaluate run in the page, where these exist (this program has no DOM types)
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const document: any, window: any, getComputedStyle: any;
const run = promisify(execFile);

describe('dashboard in a browser: live, queues, schedules, comfort', { skip: skip ?? false }, () => {
  let dir: string;
  let file: string;
  let storage: Storage;
  let client: Client;
  let worker: Worker;
  let dash: RunningDashboard;
  let browser: Browser;
  const claims: number[] = [];

  /** `leasehold enqueue` in a process of its own, on the same database file; the new job's id. */
  async function enqueueElsewhere(type: string, queue: string): Promise<string> {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(root, 'src/cli/bin.ts'), '--db', `sqlite:${file}`, 'enqueue', type, '{}', '--queue', queue], { cwd: root });
    return /enqueued job (\d+)/.exec(stdout)?.[1] ?? assert.fail(`no job id in ${stdout}`);
  }

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'leasehold-dash-live-'));
    file = path.join(dir, 'jobs.db');
    storage = sqliteStorage({ path: file });
    await storage.migrate();
    client = new Client({ storage });
    const tick = defineJob({ type: 'tick', handler: async () => {} });
    worker = new Worker({ storage, jobs: [tick], queues: ['mail'], concurrency: 2, pollIntervalMs: 20, sweeper: false, scheduler: false, logger: pino({ level: 'silent' }), workerId: 'mail-1', observers: [{ claimed: (n) => claims.push(n) }] });
    await worker.start();
    await client.enqueue('tick', {}, { queue: 'mail' });
    await upsertSchedule(storage, { name: 'hourly-tick', cron: '0 * * * *', timezone: 'Asia/Tokyo', type: 'tick', queue: 'mail', payload: {} });
    for (let i = 0; i < 7; i++) await client.enqueue('report', { i }, { queue: 'reports', delayMs: 3_600_000 });
    dash = await serveDashboard({ client: withOperatorApi(client), port: 0, host: '127.0.0.1', pollMs: 150 });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await dash?.close();
    await worker?.stop({ deadlineMs: 1_000 });
    await storage?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a count and the job list follow an enqueue from another process, without a reload; polling stops while hidden', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(dash.url);
    await page.locator('#live[data-state="live"]').waitFor();
    const queued = page.locator('[data-slot="n.queued"]');
    const before = Number(await queued.innerText());
    await page.evaluate(() => Object.assign(window, { stayed: true }));
    await enqueueElsewhere('report', 'elsewhere');
    await page.waitForFunction((n) => document.querySelector('[data-slot="n.queued"]')?.textContent === String(n), before + 1);
    assert.equal(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed), true, 'the page was not reloaded');

    await page.goto(`${dash.url}jobs`);
    const id = await enqueueElsewhere('report', 'elsewhere');
    await page.locator(`table[data-table="jobs"] a[href="/jobs/${id}"]`).waitFor();

    // hidden: the script stops asking; visible again: it asks at once
    await page.evaluate(() => {
      Object.defineProperty(document, 'hidden', { value: true, configurable: true });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await page.locator('#live[data-state="paused"]').waitFor();
    const asked = page.waitForRequest((r) => r.url().includes('/api/jobs'));
    await page.evaluate(() => {
      Object.defineProperty(document, 'hidden', { value: false, configurable: true });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await asked;
    await page.locator('#live[data-state="live"]').waitFor();
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('Pause on the queues page: the running worker claims nothing from the queue until Resume', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${dash.url}queues`);
    const row = page.locator('table[data-table="queues"] tbody tr', { hasText: 'mail' });
    await row.getByRole('button', { name: 'Pause' }).click();
    await page.waitForURL(/done=paused/);
    assert.deepEqual((await storage.queues.states()).map((s) => [s.queue, s.paused]), [['mail', true]]);
    const job = await client.enqueue('tick', {}, { queue: 'mail' });
    const seen = claims.length;
    await waitFor(() => claims.length >= seen + 2, 10_000, 'two claims by the worker while paused');
    assert.deepEqual(claims.slice(seen, seen + 2), [0, 0]);
    assert.equal((await client.getJob(job.id)).status, 'queued');
    // the page shows the waiting job without a reload
    await page.waitForFunction(() => [...document.querySelectorAll('table[data-table="queues"] tbody tr')].some((tr) => tr.textContent?.startsWith('mail') && tr.querySelector('[data-label="Due"]')?.textContent === '1'));
    await row.getByRole('button', { name: 'Resume' }).click();
    await page.waitForURL(/done=resumed/);
    await waitFor(async () => (await client.getJob(job.id)).status === 'succeeded', 10_000, 'the job runs once resumed');
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('Run now on a schedule enqueues a job; its page shows it finishing without a reload', async () => {
    const { page, problems } = await openPage(browser, { timezoneId: 'Europe/Lisbon' });
    await page.goto(`${dash.url}schedules`);
    assert.match(await page.locator('table[data-table="schedules"] tbody').innerText(), /\d{2}:00:00 GMT\+9/, 'next fires in the schedule\'s zone');
    await page.getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL(/done=ran&job=\d+/);
    await page.getByRole('link', { name: /^job \d+$/ }).click();
    await page.locator('h1 [data-slot="status"] .badge', { hasText: 'succeeded' }).waitFor();
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('Cancel asks in a dialog: Back changes nothing, the dialog\'s button cancels', async () => {
    const job = await client.enqueue('report', {}, { queue: 'reports', delayMs: 3_600_000 });
    const { page, problems } = await openPage(browser);
    await page.goto(`${dash.url}jobs/${job.id}`);
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    const dialog = page.locator('dialog[open]');
    await dialog.getByText(`Cancel job ${job.id} (report)?`).waitFor();
    await dialog.getByRole('button', { name: 'Back' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.equal((await client.getJob(job.id)).status, 'queued');
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await page.locator('dialog[open]').getByRole('button', { name: 'Cancel' }).click();
    await page.waitForURL(/done=cancelled/);
    assert.equal((await client.getJob(job.id)).status, 'cancelled');
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('dark mode: the system\'s preference, and the toggle remembered across a reload', async () => {
    const bg = (p: import('playwright-core').Page) => p.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const dark = await openPage(browser, { colorScheme: 'dark' });
    await dark.page.goto(dash.url);
    assert.equal(await bg(dark.page), 'rgb(20, 24, 28)', 'prefers-color-scheme: dark');
    await dark.page.context().close();

    const { page, problems } = await openPage(browser, { colorScheme: 'light' });
    await page.goto(`${dash.url}jobs`);
    assert.equal(await bg(page), 'rgb(246, 246, 243)');
    await page.getByRole('button', { name: 'Theme: auto' }).click();
    await page.getByRole('button', { name: 'Theme: light' }).click();
    await page.getByRole('button', { name: 'Theme: dark' }).waitFor();
    assert.equal(await bg(page), 'rgb(20, 24, 28)');
    await page.reload();
    assert.equal(await page.locator('html').getAttribute('data-theme'), 'dark');
    assert.equal(await bg(page), 'rgb(20, 24, 28)');
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('times in UTC or the browser\'s zone, and the keyboard: / j k ?', async () => {
    const { page, problems } = await openPage(browser, { timezoneId: 'Asia/Tokyo' });
    await page.goto(`${dash.url}jobs?limit=3`);
    const first = page.locator('table[data-table="jobs"] time').first();
    assert.match(await first.innerText(), /Z$/);
    await page.getByRole('button', { name: 'Times: UTC' }).click();
    await page.getByRole('button', { name: 'Times: local' }).waitFor();
    assert.match(await first.innerText(), / GMT\+9$/);

    await page.keyboard.press('j');
    await page.waitForURL(/before=\d+/);
    await page.keyboard.press('k');
    await page.waitForURL((u) => !u.search.includes('before='));
    await page.keyboard.press('/');
    assert.equal(await page.evaluate(() => document.activeElement?.hasAttribute('data-search')), true, '/ focuses the search field');
    await page.keyboard.press('Escape');
    await page.keyboard.press('?');
    await page.locator('dialog[open]').getByText('Keyboard shortcuts').waitFor();
    assert.deepEqual(problems, []);
    await page.context().close();
  });
});
