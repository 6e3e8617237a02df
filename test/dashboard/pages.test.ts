/**
 * The schedules, locks and workers pages over HTTP: what they show (the next five fires in the
 * schedule's zone, holders and fences, what each worker runs now), their actions (enable,
 * disable, run now: CSRF-checked, each changing the database), attacker-chosen text escaped on
 * every page and in every JSON answer, and the display preferences without the script.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import { upsertSchedule } from '../../src/runtime/scheduler.js';
import type { Seeded } from './support.js';
import { Jar, XSS, csrfOf, foreignScripts, get, getJson, post, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

const PAGES = ['/', '/jobs', '/queues', '/schedules', '/locks', '/workers'];

describe('dashboard: schedules', () => {
  test('the next five fires in the schedule\'s zone; enable, disable and run now change the database', async () => {
    await upsertSchedule(storage, { name: 'nightly', cron: '30 2 * * *', timezone: 'Europe/Warsaw', type: 'report', payload: { note: XSS } });
    const app = createDashboard({ client: s.full });
    const jar = new Jar();
    const page = await get(app, '/schedules', jar);
    assert.equal(page.res.status, 200);
    const fires = [...page.text.matchAll(/<span class="blk mono" title="[^"]+">([^<]+)<\/span>/g)].map((m) => m[1]);
    assert.equal(fires.length, 5);
    for (const f of fires) assert.match(f!, /^\d{4}-\d\d-\d\d 02:30:00 GMT\+[12]$/, 'wall-clock 02:30 in Warsaw');
    const csrf = csrfOf(page.text);

    assert.equal((await post(app, '/schedules/disable', { csrf: 'forged', name: 'nightly' }, jar)).res.status, 403);
    assert.equal((await storage.schedules.get({ name: 'nightly' }))!.enabled, true);
    const off = await post(app, '/schedules/disable', { csrf, name: 'nightly' }, jar);
    assert.equal(off.res.headers.get('location'), '/schedules?done=disabled');
    assert.equal((await storage.schedules.get({ name: 'nightly' }))!.enabled, false);
    assert.match((await get(app, '/schedules?done=disabled', jar)).text, /The schedule is disabled/);
    // slots passed while it was disabled: enabling must not fire them as misfires
    await storage.schedules.setEnabled({ name: 'nightly', enabled: false, nextRunAt: new Date(Date.now() - 3 * 86_400_000) });
    await post(app, '/schedules/enable', { csrf, name: 'nightly' }, jar);
    const on = (await storage.schedules.get({ name: 'nightly' }))!;
    assert.equal(on.enabled, true);
    assert.ok(on.nextRunAt!.getTime() > Date.now(), 'enabled from its next future slot');

    const ran = await post(app, '/schedules/run', { csrf, name: 'nightly' }, jar);
    const jobId = /job=(\d+)$/.exec(ran.res.headers.get('location') ?? '')?.[1];
    assert.ok(jobId, 'redirects to the notice with the new job');
    const job = await s.client.getJob(jobId);
    assert.deepEqual([job.type, job.scheduleName, job.status], ['report', 'nightly', 'queued']);
    assert.match((await get(app, `/schedules?done=ran&job=${jobId}`, jar)).text, new RegExp(`Enqueued <a href="/jobs/${jobId}">job ${jobId}</a>`));
    assert.equal((await post(app, '/schedules/run', { csrf, name: 'no-such' }, jar)).res.status, 404);
    assert.equal((await post(app, '/schedules/run', { csrf, name: '<x>' }, jar)).res.status, 400);
  });

  test('without the schedule actions there are no buttons, and the POSTs answer 404', async () => {
    await upsertSchedule(storage, { name: 'hourly', cron: '0 * * * *', type: 'report', payload: {} });
    const app = createDashboard({ client: s.client });
    const jar = new Jar();
    const page = await get(app, '/schedules', jar);
    assert.doesNotMatch(page.text, /\/schedules\/run"/);
    assert.equal((await post(app, '/schedules/run', { csrf: csrfOf(page.text), name: 'hourly' }, jar)).res.status, 404);
    assert.equal((await storage.jobs.list({ type: 'report', limit: 10 })).length, 1, 'only the seeded report job');
  });
});

describe('dashboard: locks and workers', () => {
  test('locks show holder, fence and expiry; workers show what each runs now', async () => {
    await storage.locks.acquire({ name: 'nightly-export', owner: `host-a ${XSS}`, ttlMs: 60_000, slots: 1 });
    await storage.locks.acquire({ name: 'nightly-export', owner: 'host-b', ttlMs: 60_000, slots: 1 });
    await storage.workers.register({ id: 'w-busy', host: 'box', pid: 7, version: '0.1.0', queues: null, types: ['orphan-type'] });
    await storage.workers.register({ id: 'w-idle', host: 'box', pid: 8, version: '0.1.0', queues: ['mail'], types: ['send-email'] });
    const [claimed] = await storage.leases.claim({ workerId: 'w-busy', types: ['orphan-type'], queues: null, limit: 1, leaseMs: 60_000 });
    const app = createDashboard({ client: s.full });

    const locks = await get(app, '/locks');
    assert.match(locks.text, /<td data-label="Holder"><span class="mono">host-a &lt;script&gt;alert\(1\)&lt;\/script&gt;<\/span><\/td><td class="num" data-label="Fence">1<\/td>/);
    assert.match(locks.text, /<span class="badge s-held">held<\/span>/);
    assert.doesNotMatch(locks.text, /host-b/, 'the second acquire of a mutex got nothing');

    const workers = await getJson<{ tables: { workers: { p: { t?: string; h?: string }[] }[][] } }>(app, '/api/workers');
    const rows = new Map(workers.body!.tables.workers.map((r) => [r[0]!.p[0]!.t, r[r.length - 1]!.p]));
    assert.deepEqual(rows.get('w-busy'), [{ t: `#${claimed!.id} orphan-type`, h: `/jobs/${claimed!.id}`, c: 'blk' }]);
    assert.deepEqual(rows.get('w-idle'), [{ t: 'idle', c: 'muted' }]);
    assert.match((await get(app, '/workers')).text, /2 live of 2 registered; 1 job\(s\) running\./);
  });
});

describe('dashboard: every page and JSON answer escapes and guards', () => {
  test('attacker text is escaped on every page and in every JSON answer; no foreign script', async () => {
    await upsertSchedule(storage, { name: 'evil', everyMs: 60_000, type: 'report', payload: { x: XSS } });
    await storage.locks.acquire({ name: 'l', owner: XSS, ttlMs: 60_000, slots: 1 });
    await storage.workers.register({ id: `w${XSS}`, host: XSS, pid: 1, version: XSS, queues: [XSS], types: [XSS] });
    const app = createDashboard({ client: s.full });
    for (const path of [...PAGES, `/jobs/${s.deadId}`]) {
      const { res, text } = await get(app, path);
      assert.equal(res.status, 200, path);
      assert.deepEqual(foreignScripts(text), [], path);
      assert.ok(!text.includes(XSS), `${path} has the raw text`);
    }
    for (const path of ['/api/overview', '/api/jobs', '/api/jobs?status=dead', `/api/jobs/${s.deadId}`, '/api/queues', '/api/schedules', '/api/locks', '/api/workers']) {
      const { res, text, body } = await getJson(app, path);
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.ok(!/[<>]/.test(text), `${path}: < and > are escaped in the JSON`);
      assert.ok(body && typeof body === 'object', path);
    }
    const job = await getJson<{ tables: { attempts: { p: { t?: string }[] }[][] } }>(app, `/api/jobs/${s.deadId}`);
    assert.ok(JSON.stringify(job.body).includes(XSS), 'the text itself arrives intact, for textContent');
    assert.equal((await get(app, '/api/jobs/abc')).res.status, 400);
    assert.deepEqual((await getJson(app, '/api/jobs/999999')).body, { error: 'job 999999 not found' });
  });

  test('every new POST refuses a forged or cross-origin form', async () => {
    await upsertSchedule(storage, { name: 'hourly', cron: '0 * * * *', type: 'report', payload: {} });
    const app = createDashboard({ client: s.full });
    const jar = new Jar();
    const csrf = csrfOf((await get(app, '/queues', jar)).text);
    for (const [path, fields] of [['/queues/pause', { queue: 'default' }], ['/schedules/disable', { name: 'hourly' }], ['/schedules/run', { name: 'hourly' }], ['/prefs', { theme: 'dark' }]] as const) {
      assert.equal((await post(app, path, { ...fields }, jar)).res.status, 403, `${path} without a token`);
      assert.equal((await post(app, path, { ...fields, csrf }, jar, { origin: 'https://evil.example' })).res.status, 403, `${path} cross-origin`);
    }
    assert.equal((await storage.queues.states()).length, 0);
    assert.equal((await storage.schedules.get({ name: 'hourly' }))!.enabled, true);
    assert.equal((await storage.jobs.list({ type: 'report', limit: 10 })).length, 1);
  });
});

describe('dashboard: display preferences', () => {
  test('theme and time zone are remembered in cookies and rendered on <html>, without the script', async () => {
    const app = createDashboard({ client: s.client });
    const jar = new Jar();
    const page = await get(app, '/jobs?status=dead', jar);
    assert.match(page.text, /<html lang="en" data-theme="auto" data-tz="utc">/);
    assert.match(page.text, /<button name="theme" value="light"[^>]*>Theme: auto<\/button>/);
    const set = await post(app, '/prefs', { csrf: csrfOf(page.text), theme: 'dark', next: '/jobs?status=dead' }, jar);
    assert.equal(set.res.status, 303);
    assert.equal(set.res.headers.get('location'), '/jobs?status=dead');
    assert.match(set.res.headers.getSetCookie().join('\n'), /leasehold_theme=dark; Max-Age=31536000; Path=\/; SameSite=Strict/);
    await post(app, '/prefs', { csrf: csrfOf(page.text), tz: 'local', next: 'https://evil.example/' }, jar);
    const after = await get(app, '/', jar);
    assert.match(after.text, /<html lang="en" data-theme="dark" data-tz="local">/);
    assert.match(after.text, /Times: local/);
    assert.equal((await post(app, '/prefs', { csrf: csrfOf(page.text), theme: 'neon' }, jar)).res.status, 400);
    // an unknown cookie value falls back to the default
    jar.cookies.set('leasehold_theme', '"><x');
    assert.match((await get(app, '/', jar)).text, /data-theme="auto"/);
  });
});
