/**
 * The live machinery over HTTP: the page and its JSON endpoint render one model (the JSON's rows,
 * drawn by the server's renderer, are the page's table body), an unchanged answer is a 304 with
 * no body, a change comes through; the script and stylesheet are served from the dashboard
 * (no sign-in needed, cached by content hash) and the script is valid JavaScript.
 */
import assert from 'node:assert/strict';
import { Script } from 'node:vm';
import { afterEach, beforeEach, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { SCRIPT, STYLE } from '../../src/dashboard/assets/index.js';
import { createDashboard } from '../../src/dashboard/index.js';
import type { Cell } from '../../src/dashboard/view.js';
import { rowsHtml } from '../../src/dashboard/view.js';
import type { Seeded } from './support.js';
import { Jar, TOKEN, get, getJson, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
// stopped after seeding by the test that renders a page twice: ages shown must not move between the two
let stoppedAt: number | null = null;
beforeEach(async () => {
  stoppedAt = null;
  ({ storage, s } = await seededMemory(() => stoppedAt ?? Date.now()));
});
afterEach(() => storage.close());

const tbody = (page: string, table: string) => new RegExp(`<table data-table="${table}"[^>]*>.*?<tbody>(.*?)</tbody>`, 's').exec(page)?.[1];

test('a page and its JSON are one model: the JSON rows drawn by the server are the page\'s table body', async () => {
  stoppedAt = Date.now();
  const app = createDashboard({ client: s.full });
  for (const [page, api, table, cols] of [['/jobs', '/api/jobs', 'jobs', 8], ['/jobs?status=dead', '/api/jobs?status=dead', 'jobs', 8], [`/jobs/${s.deadId}`, `/api/jobs/${s.deadId}`, 'attempts', 7], ['/', '/api/overview', 'types', 7], ['/queues', '/api/queues', 'queues', 9]] as const) {
    const html = (await get(app, page)).text;
    const json = await getJson<{ tables: Record<string, Cell[][]> }>(app, api);
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(html)![1]!;
    assert.equal(String(await rowsHtml(json.body!.tables[table]!, cols, '', csrf)), tbody(html, table), `${page} vs ${api}`);
  }
  assert.match((await get(app, '/jobs')).text, /<main data-live="\/api\/jobs">/);
  assert.match((await get(app, '/jobs?status=dead&before=99')).text, /<main data-live="\/api\/jobs\?status=dead&amp;before=99">/);
});

test('an unchanged answer is 304 with no body; an enqueue changes it', async () => {
  const app = createDashboard({ client: s.client });
  const first = await get(app, '/api/overview');
  const tag = first.res.headers.get('etag');
  assert.ok(tag);
  const same = await get(app, '/api/overview', new Jar(), { 'if-none-match': tag });
  assert.equal(same.res.status, 304);
  assert.equal(same.text, '');
  assert.match(same.res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  await s.client.enqueue('report', { day: 'x' });
  const changed = await getJson<{ slots: Record<string, { t: string }[]> }>(app, '/api/overview', new Jar(), { 'if-none-match': tag });
  assert.equal(changed.res.status, 200);
  assert.equal(changed.body!.slots['n.queued']![0]!.t, '3');
});

test('the script and stylesheet: served by the dashboard before sign-in, immutable by hash, the script parses', async () => {
  const app = createDashboard({ client: s.client, token: TOKEN, basePath: '/ops' });
  for (const a of [SCRIPT, STYLE]) {
    const { res, text } = await get(app, `/ops${a.path}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), a.type);
    assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(text, a.body);
  }
  assert.equal((await app.request(`http://attacker.example/ops${SCRIPT.path}`)).status, 403, 'the Host check comes first');
  assert.doesNotThrow(() => new Script(SCRIPT.body, { filename: 'dashboard.js' }));
  // no HTML string ever reaches the DOM from the script
  assert.doesNotMatch(SCRIPT.body, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
  const login = await get(app, '/ops/login');
  assert.match(login.text, new RegExp(`<link rel="stylesheet" href="/ops${STYLE.path}">`));
});

test('pollMs reaches the page, 0 turns polling off, and a bad value is refused', async () => {
  assert.match((await get(createDashboard({ client: s.client, pollMs: 250 }), '/')).text, /data-poll="250"/);
  assert.match((await get(createDashboard({ client: s.client, pollMs: 0 }), '/')).text, /data-poll="0"/);
  for (const pollMs of [-1, 50, 1.5]) assert.throws(() => createDashboard({ client: s.client, pollMs }), /pollMs/);
});
