/**
 * The dashboard over HTTP (Hono's `app.request`, memory storage): escaping of attacker-controlled
 * text, CSRF on every POST, the token rules, 400 on malformed input with nothing changed, and
 * the security headers.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard, serveDashboard } from '../../src/dashboard/index.js';
import type { Seeded } from './support.js';
import { Jar, TOKEN, XSS, csrfOf, foreignScripts, get, post, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

const statusOf = async (id: string) => (await s.client.getJob(id)).status;

describe('dashboard: escaping and headers', () => {
  test('payload, error message and stack with <script> are shown escaped, never raw', async () => {
    const app = createDashboard({ client: s.client });
    for (const path of [`/jobs/${s.deadId}`, '/jobs', '/jobs?status=dead', '/']) {
      const { res, text } = await get(app, path);
      assert.equal(res.status, 200, path);
      assert.deepEqual(foreignScripts(text), [], `${path} carries a <script> that is not the dashboard's own`);
      assert.ok(!text.includes('<script>'), `${path} contains a raw <script>`);
      if (path !== '/') assert.ok(text.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), `${path} shows the escaped text`);
    }
    const { text } = await get(app, `/jobs/${s.deadId}`);
    assert.match(text, /mail provider said &lt;script&gt;/);
    assert.match(text, /HANDLER_ERROR/);
    assert.match(text, /w-test/); // the attempt's worker
  });

  test('filter values echoed into the page are escaped too', async () => {
    const app = createDashboard({ client: s.client });
    const { res, text } = await get(app, `/jobs?queue=${encodeURIComponent('"><script>x</script>')}`);
    assert.equal(res.status, 200);
    assert.ok(!text.includes('<script>x'));
    assert.ok(text.includes('&quot;&gt;&lt;script&gt;x'));
  });

  test('security headers on pages, JSON, errors, and 404s outside the base path', async () => {
    const app = createDashboard({ client: s.client });
    const mounted = createDashboard({ client: s.client, basePath: '/admin' });
    for (const [a, path] of [[app, '/'], [app, '/jobs/abc'], [app, '/nope'], [app, '/api/overview'], [app, '/api/nope'], [mounted, '/elsewhere'], [mounted, '/'], [mounted, '/admin/nope']] as const) {
      const { res } = await get(a, path);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/, path);
      assert.match(csp, /frame-ancestors 'none'/);
      // only the dashboard's own script and stylesheet, and no HTML string into the DOM (Trusted Types)
      assert.match(csp, /script-src 'self';/);
      assert.match(csp, /style-src 'self';/);
      assert.match(csp, /require-trusted-types-for 'script'; trusted-types 'none'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('x-frame-options'), 'DENY');
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.equal(res.headers.get('referrer-policy'), 'same-origin');
      assert.equal(res.headers.get('cross-origin-opener-policy'), 'same-origin');
      assert.equal(res.headers.get('cross-origin-resource-policy'), 'same-origin');
    }
  });

  test('the session cookie is HttpOnly and SameSite=Strict', async () => {
    const app = createDashboard({ client: s.client });
    const { res } = await get(app, '/');
    const cookie = res.headers.getSetCookie().join('\n');
    assert.match(cookie, /leasehold_sid=/);
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
  });
});

describe('dashboard: CSRF', () => {
  test('POST without a CSRF token, with a wrong one, or with another session\'s → 403, nothing changes', async () => {
    const app = createDashboard({ client: s.client });
    const jar = new Jar();
    await get(app, `/jobs/${s.deadId}`, jar);
    assert.equal((await post(app, `/jobs/${s.deadId}/retry`, {}, jar)).res.status, 403);
    assert.equal((await post(app, `/jobs/${s.deadId}/retry`, { csrf: 'x'.repeat(43) }, jar)).res.status, 403);
    const other = new Jar();
    const otherCsrf = csrfOf((await get(app, `/jobs/${s.deadId}`, other)).text);
    assert.equal((await post(app, `/jobs/${s.deadId}/retry`, { csrf: otherCsrf }, jar)).res.status, 403);
    assert.equal((await post(app, `/jobs/${s.queuedId}/cancel`, {}, jar)).res.status, 403);
    assert.equal(await statusOf(s.deadId), 'dead');
    assert.equal(await statusOf(s.queuedId), 'queued');
  });

  test('a cross-origin POST is refused even with the right token', async () => {
    const app = createDashboard({ client: s.client });
    const jar = new Jar();
    const csrf = csrfOf((await get(app, `/jobs/${s.deadId}`, jar)).text);
    assert.equal((await post(app, `/jobs/${s.deadId}/retry`, { csrf }, jar, { origin: 'https://evil.example' })).res.status, 403);
    assert.equal((await post(app, `/jobs/${s.deadId}/retry`, { csrf }, jar, { origin: 'null' })).res.status, 403);
    assert.equal((await post(app, `/jobs/${s.deadId}/retry`, { csrf }, jar, { 'sec-fetch-site': 'cross-site' })).res.status, 403);
    assert.equal(await statusOf(s.deadId), 'dead');
  });

  test('with the right token: Retry makes the dead job queued, Cancel cancels', async () => {
    const app = createDashboard({ client: s.client });
    const jar = new Jar();
    const csrf = csrfOf((await get(app, `/jobs/${s.deadId}`, jar)).text);
    const r = await post(app, `/jobs/${s.deadId}/retry`, { csrf }, jar);
    assert.equal(r.res.status, 303);
    assert.equal(r.res.headers.get('location'), `/jobs/${s.deadId}?done=retried`);
    assert.equal(await statusOf(s.deadId), 'queued');
    // Cancel asks first: a dialog with the script (the form says what to ask), else a confirmation page; nothing changes until confirmed=1
    assert.match((await get(app, `/jobs/${s.queuedId}`, jar)).text, /<form class="inline" method="post" action="\/jobs\/\d+\/cancel" data-confirm="Cancel job \d+ \(send-email\)\? It will not run again unless someone retries it\.">/);
    const ask = await post(app, `/jobs/${s.queuedId}/cancel`, { csrf }, jar);
    assert.equal(ask.res.status, 200);
    assert.match(ask.text, /Cancel job \d+ \(send-email\)\? It will not run again/);
    assert.match(ask.text, new RegExp(`action="/jobs/${s.queuedId}/cancel"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="confirmed" value="1">`));
    assert.equal(await statusOf(s.queuedId), 'queued');
    const c = await post(app, `/jobs/${s.queuedId}/cancel`, { csrf, confirmed: '1' }, jar);
    assert.equal(c.res.status, 303);
    assert.equal(await statusOf(s.queuedId), 'cancelled');
    const page = await get(app, `/jobs/${s.queuedId}?done=cancelled`, jar);
    assert.match(page.text, /The job is cancelled/);
  });

  test('GET never changes state', async () => {
    const app = createDashboard({ client: s.client });
    assert.equal((await get(app, `/jobs/${s.deadId}/retry`)).res.status, 404);
    assert.equal((await get(app, `/jobs/${s.queuedId}/cancel`)).res.status, 404);
    assert.equal(await statusOf(s.deadId), 'dead');
    assert.equal(await statusOf(s.queuedId), 'queued');
  });
});

describe('dashboard: malformed requests → 400, nothing changes', () => {
  test('bad ids, unknown status, bad paging', async () => {
    const app = createDashboard({ client: s.client });
    for (const path of ['/jobs/abc', '/jobs/0', '/jobs/-1', '/jobs/1e3', '/jobs?status=bogus', '/jobs?before=x', '/jobs?limit=0', '/jobs?limit=9999', `/jobs?type=${'t'.repeat(300)}`]) {
      const { res, text } = await get(app, path);
      assert.equal(res.status, 400, path);
      assert.match(text, /Nothing was changed/);
    }
    const { text } = await get(app, '/jobs?status=bogus');
    assert.match(text, /unknown status filter &quot;bogus&quot;/);
  });

  test('POSTs with a bad id, on an unknown job, or in the wrong state', async () => {
    const app = createDashboard({ client: s.client });
    const jar = new Jar();
    const csrf = csrfOf((await get(app, `/jobs/${s.deadId}`, jar)).text);
    assert.equal((await post(app, '/jobs/abc/retry', { csrf }, jar)).res.status, 400);
    assert.equal((await post(app, '/jobs/999999/retry', { csrf }, jar)).res.status, 404);
    assert.equal((await post(app, `/jobs/${s.succeededId}/cancel`, { csrf }, jar)).res.status, 409);
    assert.equal((await get(app, '/jobs/999999')).res.status, 404);
    assert.equal(await statusOf(s.succeededId), 'succeeded');
    const json = await app.request(`/jobs/${s.deadId}/retry`, { method: 'POST', body: JSON.stringify({ csrf }), headers: { cookie: jar.header(), 'content-type': 'application/json' } });
    assert.equal(json.status, 400);
    assert.equal(await statusOf(s.deadId), 'dead');
  });
});

describe('dashboard: mounting and extras', () => {
  test('basePath prefixes every route and link', async () => {
    const app = createDashboard({ client: s.client, basePath: '/admin/jobs' });
    const { res, text } = await get(app, '/admin/jobs/');
    assert.equal(res.status, 200);
    assert.match(text, /href="\/admin\/jobs\/jobs\?status=dead"/);
    assert.equal((await get(app, '/')).res.status, 404);
    assert.throws(() => createDashboard({ client: s.client, basePath: 'no-slash' }), /basePath/);
  });

  test('the overview shows counts, workers and due jobs no live worker handles', async () => {
    await storage.workers.register({ id: 'w-live', host: 'box', pid: 42, version: '0.1.0', queues: null, types: ['send-email'] });
    const app = createDashboard({ client: s.client });
    const { text } = await get(app, '/');
    assert.match(text, /w-live/);
    assert.match(text, /wait for a worker that handles their type/);
    assert.match(text, /orphan-type/);
  });

  test('schedules appear when the client has listSchedules', async () => {
    const bare = Object.assign(Object.create(s.client) as typeof s.client, { listSchedules: undefined });
    const without = await get(createDashboard({ client: bare }), '/schedules');
    assert.equal(without.res.status, 404);
    const real = await get(createDashboard({ client: s.client }), '/schedules');
    assert.equal(real.res.status, 200, 'the client lists schedules');
    const now = new Date();
    const client = Object.assign(Object.create(s.client) as typeof s.client, {
      listSchedules: async () => [
        { name: `nightly${XSS}`, cron: '0 3 * * *', everyMs: null, timezone: 'Europe/Paris', type: 'report', payload: {}, queue: 'default', priority: 0, maxAttempts: 3, misfire: 'skip' as const, misfireWindowMs: null, misfireMax: 100, enabled: true, source: 'code' as const, nextRunAt: now, lastRunAt: null, lastSlotAt: null, createdAt: now, updatedAt: now },
      ],
    });
    const { res, text } = await get(createDashboard({ client }), '/schedules');
    assert.equal(res.status, 200);
    assert.match(text, /nightly&lt;script&gt;/);
    assert.match(text, /0 3 \* \* \* \(Europe\/Paris\)/);
  });

  test('serveDashboard listens on a free port and closes', async () => {
    const d = await serveDashboard({ client: s.client, port: 0 });
    try {
      const res = await fetch(`${d.url}jobs/${s.deadId}`);
      assert.equal(res.status, 200);
      assert.ok((await res.text()).includes('&lt;script&gt;'));
    } finally {
      await d.close();
    }
  });
});

describe('dashboard: mounted in your own Hono app', () => {
  test('parent.route() with basePath: dashboard rules apply to its paths only', async () => {
    const { Hono } = await import('hono');
    const parent = new Hono();
    parent.route('/', createDashboard({ client: s.client, basePath: '/admin/jobs', token: TOKEN }));
    parent.get('/health', (c) => c.text('ok'));
    assert.equal((await parent.request('/health')).status, 200, 'the parent route needs no dashboard login');
    const bearer = { authorization: `Bearer ${TOKEN}` };
    for (const p of ['/admin/jobs', '/admin/jobs/', `/admin/jobs/jobs/${s.deadId}`]) assert.equal((await parent.request(p, { headers: bearer })).status, 200, p);
    assert.equal((await parent.request('/admin/jobs/')).status, 303);
    assert.equal((await parent.request('/admin/jobs/jobs/abc', { headers: bearer })).status, 400);
  });
});
