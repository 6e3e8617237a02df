/**
 * The workflow graph and batch pages in a real browser (Debian's Chromium, as browser.test.ts):
 * the graph's boxes render and link to their jobs, a status change reaches a box through the
 * live poll, the batch page's bar has width, both fit a phone; no console error (a CSP or
 * Trusted Types violation shows up there). With UPDATE_SCREENSHOT=1 it rewrites
 * docs/dashboard-workflow.png.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import type { JobRow, Storage } from '../../src/core/storage.js';
import { serveDashboard } from '../../src/dashboard/index.js';
import type { RunningDashboard } from '../../src/dashboard/index.js';
import { Client } from '../../src/runtime/client.js';
import { withOperatorApi } from '../../src/runtime/operator.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { launch, openPage, root, skipReason } from './browser-support.js';
import { XSS } from './support.js';

const skip = skipReason();
// the callbacks given to page.evaluate run in the page, where these exist (this program has no DOM types)
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const document: any;

describe('workflow and batch pages in a browser', { skip: skip ?? false }, () => {
  let dir: string;
  let storage: Storage;
  let dash: RunningDashboard;
  let browser: Browser;
  let flow: Record<string, JobRow>;
  let batchId: string;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'leasehold-dash-wf-'));
    storage = sqliteStorage({ path: path.join(dir, 'jobs.db') });
    await storage.migrate();
    const client = new Client({ storage });
    flow = await client.enqueueFlow([
      { key: 'fetch', type: 'fetch-orders', payload: { note: XSS } },
      { key: 'invoice', type: 'render-invoices', payload: {}, dependsOn: ['fetch'] },
      { key: 'ledger', type: 'post-to-ledger', payload: {}, dependsOn: ['fetch'] },
      { key: 'mail', type: 'send-invoice-email', payload: {}, dependsOn: ['invoice', 'ledger'] },
      { key: 'report', type: 'daily-report', payload: {}, dependsOn: ['mail'] },
    ]);
    const batch = await client.batches.create({ onComplete: { type: 'batch-report', payload: {} } });
    batchId = batch.id;
    await client.batches.add(batch.id, Array.from({ length: 8 }, (_, i) => ({ type: 'resize-image', payload: { i } })));
    const claimed = await storage.leases.claim({ workerId: 'w', types: ['resize-image'], queues: null, limit: 3, leaseMs: 30_000 });
    await storage.leases.finish({ items: claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) });
    dash = await serveDashboard({ client: withOperatorApi(client), port: 0, host: '127.0.0.1', pollMs: 200 });
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await dash?.close();
    await storage?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('the graph renders every job as a box linked to its job, and a finish reaches its box live', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${dash.url}jobs/${flow.mail!.id}`);
    await page.click('a:text("graph")');
    await page.waitForURL(/\/workflow$/);
    const boxes = await page.locator('svg.wf-graph g.wf-node').evaluateAll((els) => els.map((e) => {
      const r = e.getBoundingClientRect();
      return { id: e.getAttribute('data-node'), state: e.getAttribute('data-state'), w: Math.round(r.width), h: Math.round(r.height) };
    }));
    assert.equal(boxes.length, 5);
    for (const b of boxes) assert.ok(b.w > 100 && b.h > 30, `box ${b.id} drawn: ${b.w}x${b.h}`);
    assert.equal(await page.locator('svg.wf-graph path.wf-edge').count(), 5);

    const root0 = flow.fetch!.id;
    const box = page.locator(`g.wf-node[data-node="${root0}"]`);
    assert.equal(await box.getAttribute('data-state'), 'queued');
    const [c] = await storage.leases.claim({ workerId: 'w', types: ['fetch-orders'], queues: null, limit: 1, leaseMs: 30_000 });
    await storage.leases.finish({ items: [{ id: c!.id, leaseToken: c!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }] });
    await page.waitForFunction((id: string) => document.querySelector(`g.wf-node[data-node="${id}"]`)?.getAttribute('data-state') === 'succeeded', root0, { timeout: 15_000 });
    assert.equal(await page.locator(`g.wf-node[data-node="${root0}"] tspan`).textContent(), 'succeeded');
    assert.equal(await page.locator(`g.wf-node[data-node="${flow.invoice!.id}"]`).getAttribute('data-state'), 'queued');
    if (process.env.UPDATE_SCREENSHOT === '1') await page.screenshot({ path: path.join(root, 'docs/dashboard-workflow.png'), fullPage: true });

    await page.locator(`svg.wf-graph a[href$="/jobs/${flow.ledger!.id}"]`).click();
    await page.waitForURL(new RegExp(`/jobs/${flow.ledger!.id}$`));
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('the batch page draws its bar; both pages fit a 390 px phone', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${dash.url}batches`);
    await page.click(`a:text("#${batchId}")`);
    await page.waitForURL(new RegExp(`/batches/${batchId}$`));
    const widths = await page.locator('div.bar > span').evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().width)));
    assert.equal(widths.length, 2);
    assert.ok(widths[0]! > 0 && widths[1]! > widths[0]!, `3 of 8 succeeded, 5 pending: ${widths.join(', ')}`);
    await page.context().close();
    const phone = await openPage(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    for (const p of [`jobs/${flow.fetch!.id}/workflow`, `batches/${batchId}`, 'batches']) {
      await phone.page.goto(`${dash.url}${p}`);
      const width = await phone.page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 390, `/${p} is ${width} px wide`);
    }
    assert.deepEqual([...problems, ...phone.problems], []);
    await phone.page.context().close();
  });
});
