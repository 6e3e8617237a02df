/**
 * What the browser tests share: Debian's Chromium driven by playwright-core (no browser is ever
 * downloaded), skipped loudly when it is missing unless CI requires it, and a page that fails
 * the test on any console error (a CSP or Trusted Types violation shows up there).
 */
import { appendFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.LEASEHOLD_CHROMIUM ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'];
const required = process.env.LEASEHOLD_REQUIRE_BROWSER === '1' || (process.env.LEASEHOLD_REQUIRE_DBS ?? '').split(',').includes('all');
export const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

/** null when Chromium is there; else why the suite is skipped (or a throw when CI requires it). */
export function skipReason(): string | null {
  if (existsSync(CHROMIUM)) return null;
  const msg = `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set LEASEHOLD_CHROMIUM)`;
  if (required) throw new Error(`dashboard browser test: ${msg}, and CI requires it`);
  const line = `SKIPPED dashboard browser test: ${msg}.`;
  process.stderr.write(`\n!!! ${line}\n\n`);
  if (process.env.LEASEHOLD_SKIP_REPORT) appendFileSync(process.env.LEASEHOLD_SKIP_REPORT, `${line}\n`);
  return line;
}

export function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}

/** A page in its own context; console errors and page errors are collected in `problems`. */
export async function openPage(browser: Browser, opts: BrowserContextOptions = {}): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, ...opts });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  return { page, problems };
}
