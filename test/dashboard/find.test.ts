/**
 * The dashboard's search, bulk actions, charts and readable history over HTTP (memory storage,
 * the client with the operator calls): key prefix and payload text, the capped message, an id
 * in the search box, paging both ways with the count; a bulk action's count, confirmation,
 * CSRF and result; operator events on a job's page; the charts of known attempts; escaping and
 * credentials on every new page and JSON endpoint.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import type { DashboardClient } from '../../src/dashboard/client.js';
import type { Seeded } from './support.js';
import { Jar, TOKEN, XSS, csrfOf, foreignScripts, get, getJson, post, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

const ids = (page: string) => [...page.matchAll(/<a href="\/jobs\/(\d+)">/g)].map((m) => m[1]);
const statusOf = async (id: string) => (await s.client.getJob(id)).status;

describe('dashboard: find anything', () => {
  test('an idempotency key prefix finds the keyed jobs; an exact key one', async () => {
    const a = await s.client.enqueue('report', { n: 1 }, { idempotencyKey: 'order-17' });
    const b = await s.client.enqueue('report', { n: 2 }, { idempotencyKey: 'order-18' });
    const c = await s.client.enqueue('report', { n: 3 }, { idempotencyKey: 'other-1' });
    const app = createDashboard({ client: s.full });
    const { text } = await get(app, '/jobs?key=order-*');
    assert.deepEqual(ids(text), [b.id, a.id]);
    assert.match(text, /2 jobs match/);
    assert.match(text, /value="order-\*"/, 'the filter stays in the form');
    assert.deepEqual(ids((await get(app, '/jobs?key=other-1')).text), [c.id]);
  });

  test('payload text finds the job; the live JSON follows the same filter', async () => {
    const app = createDashboard({ client: s.full });
    const { text } = await get(app, '/jobs?q=B%40Example.com');
    assert.deepEqual(ids(text), [s.queuedId]);
    assert.match(text, /data-live="\/api\/jobs\?q=B%40Example.com"/);
    const live = await getJson<{ tables: { jobs: { p: { t: string }[] }[][] }; slots: { count: { t: string }[] } }>(app, '/api/jobs?q=B%40Example.com');
    assert.deepEqual(live.body!.tables.jobs.map((r) => r[0]!.p[0]!.t), [s.queuedId]);
    assert.equal(live.body!.slots.count[0]!.t, '1 job matches');
    // error text too
    assert.deepEqual(ids((await get(app, '/jobs?q=mail+provider')).text), [s.deadId]);
  });

  test('a text search that stopped at its bound says so', async () => {
    for (let i = 0; i < 5; i++) await s.client.enqueue('report', { n: i });
    const capped: DashboardClient = new Proxy(s.full, {
      get: (t, p) => (p === 'findJobs' ? (q: Parameters<NonNullable<DashboardClient['findJobs']>>[0]) => t.findJobs({ ...q, scanLimit: 2 }) : Reflect.get(t, p)),
    });
    const app = createDashboard({ client: capped });
    const { text } = await get(app, '/jobs?q=a%40example.com');
    assert.match(text, /This page looked for the text in the newest 10,000 jobs, within the 100,000 job ids nearest here \(no index answers this filter\); more may match further on/);
    assert.doesNotMatch(text, /data-show="capped" hidden/);
    const plain = await get(createDashboard({ client: s.full }), '/jobs?q=a%40example.com');
    assert.match(plain.text, /data-show="capped" hidden/);
  });

  test('a job id in the search box goes to the job; an unknown id searches', async () => {
    const app = createDashboard({ client: s.full });
    const { res } = await get(app, `/jobs?q=${s.deadId}`);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `/jobs/${s.deadId}`);
    const miss = await get(app, '/jobs?q=987654');
    assert.equal(miss.res.status, 200);
    assert.match(miss.text, /No jobs match/);
  });

  test('paging older and newer with the count; bad cursors are 400', async () => {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await s.client.enqueue('page-me', { i })).id);
    const app = createDashboard({ client: s.full });
    const first = await get(app, '/jobs?type=page-me&limit=2');
    assert.deepEqual(ids(first.text), [made[4], made[3]]);
    assert.match(first.text, /5 jobs match/);
    assert.doesNotMatch(first.text, /rel="prev"/);
    const older = /<a href="([^"]+)" rel="next"/.exec(first.text)![1]!.replaceAll('&amp;', '&');
    const second = await get(app, older);
    assert.deepEqual(ids(second.text), [made[2], made[1]]);
    const newer = /<a href="([^"]+)" rel="prev"/.exec(second.text)![1]!.replaceAll('&amp;', '&');
    assert.match(newer, /after=/);
    assert.deepEqual(ids((await get(app, newer)).text), [made[4], made[3]]);
    const last = await get(app, /<a href="([^"]+)" rel="next"/.exec(second.text)![1]!.replaceAll('&amp;', '&'));
    assert.deepEqual(ids(last.text), [made[0]]);
    assert.doesNotMatch(last.text, /rel="next"/);
    assert.equal((await get(app, '/jobs?before=1&after=2')).res.status, 400);
    assert.equal((await get(app, '/jobs?before=x')).res.status, 400);
  });
});

describe('dashboard: bulk actions', () => {
  test('Retry all matching: count and filter asked first, CSRF required, then done and recorded', async () => {
    const other = await s.client.enqueue('report', { x: 1 }, { maxAttempts: 1 });
    await s.client.cancel(other.id);
    const app = createDashboard({ client: s.full });
    const jar = new Jar();
    const list = await get(app, '/jobs?status=dead', jar);
    assert.match(list.text, /<form class="inline" method="post" action="\/jobs\/bulk" data-confirm-from="\/api\/bulk\?action=retry&amp;status=dead">.*name="action" value="retry"><input type="hidden" name="status" value="dead"><button class="">Retry…<\/button>/);
    const csrf = csrfOf(list.text);
    assert.equal((await post(app, '/jobs/bulk', { action: 'retry', status: 'dead', confirmed: '1' }, jar)).res.status, 403);
    assert.equal(await statusOf(s.deadId), 'dead');
    const ask = await post(app, '/jobs/bulk', { csrf, action: 'retry', status: 'dead' }, jar);
    assert.equal(ask.res.status, 200);
    assert.match(ask.text, /<h1>Retry 1 job\?<\/h1>/);
    assert.match(ask.text, /<dd data-bulk-filter>status dead<\/dd><dt>Jobs it changes now<\/dt><dd data-bulk-count>1<\/dd>/);
    assert.equal(await statusOf(s.deadId), 'dead', 'nothing changes before the confirmation');
    // the script's dialog asks the same, from JSON
    const dialog = await getJson<{ question: string; label: string; count: number; exact: boolean }>(app, '/api/bulk?action=retry&status=dead', jar);
    assert.deepEqual(dialog.body, { question: 'Retry 1 job matching status dead? Each failed, dead, cancelled or waiting job becomes due now with its attempt budget reset.', label: 'Retry 1 job', count: 1, exact: true });
    assert.equal((await getJson(app, '/api/bulk?action=retry', jar)).body!.question, null, 'no filter: the page asks, with its all-jobs box');
    assert.equal((await get(app, '/api/bulk?action=explode', jar)).res.status, 400);
    const none = await post(app, '/jobs/bulk', { csrf, action: 'retry', status: 'dead', queue: 'elsewhere' }, jar);
    assert.match(none.text, /<h1>Retry 0 jobs\?<\/h1>/);
    assert.match(none.text, /No job matches now/);
    const done = await post(app, '/jobs/bulk', { csrf, action: 'retry', status: 'dead', confirmed: '1' }, jar, {}, '127.0.0.1');
    assert.equal(done.res.status, 303);
    assert.equal(done.res.headers.get('location'), '/jobs?status=dead&done=retry%3A1');
    assert.equal(await statusOf(s.deadId), 'queued');
    assert.equal(await statusOf(other.id), 'cancelled', 'a job outside the filter is left alone');
    assert.match((await get(app, done.res.headers.get('location')!, jar)).text, /<div class="notice" role="status">1 job retried\.<\/div>/);
    const [event] = await storage.jobs.events({ jobId: s.deadId });
    assert.match(event!.actor, /^dashboard:session-[0-9a-f]{8}$/);
    assert.equal(event!.source, '127.0.0.1');
  });

  test('no filter: asked with an "all jobs" box, refused without it; a bad action is refused', async () => {
    const app = createDashboard({ client: s.full });
    const jar = new Jar();
    const csrf = csrfOf((await get(app, '/jobs', jar)).text);
    const ask = await post(app, '/jobs/bulk', { csrf, action: 'cancel' }, jar);
    assert.match(ask.text, /no filter: every job/);
    assert.match(ask.text, /name="all" value="1" required/);
    const refused = await post(app, '/jobs/bulk', { csrf, action: 'cancel', confirmed: '1' }, jar);
    assert.equal(refused.res.status, 400);
    assert.match(refused.text, /tick &quot;all jobs&quot;/);
    assert.equal(await statusOf(s.queuedId), 'queued');
    const all = await post(app, '/jobs/bulk', { csrf, action: 'cancel', confirmed: '1', all: '1' }, jar);
    assert.equal(all.res.status, 303);
    assert.equal(await statusOf(s.queuedId), 'cancelled');
    assert.equal((await post(app, '/jobs/bulk', { csrf, action: 'explode', status: 'dead' }, jar)).res.status, 400);
  });

  test('a text search in bulk: the confirmation names the text, only the jobs it finds change', async () => {
    const app = createDashboard({ client: s.full });
    const jar = new Jar();
    const page = await get(app, '/jobs?q=provider', jar);
    assert.match(page.text, /<input type="hidden" name="action" value="retry"><input type="hidden" name="q" value="provider"><button class="">Retry…<\/button>/);
    const csrf = csrfOf(page.text);
    const ask = await post(app, '/jobs/bulk', { csrf, action: 'retry', q: 'provider' }, jar);
    assert.match(ask.text, /<dd data-bulk-filter>text &quot;provider&quot;<\/dd><dt>Jobs it changes now<\/dt><dd data-bulk-count>1<\/dd>/);
    const done = await post(app, '/jobs/bulk', { csrf, action: 'retry', q: 'provider', confirmed: '1' }, jar);
    assert.equal(done.res.headers.get('location'), '/jobs?q=provider&done=retry%3A1');
    assert.equal(await statusOf(s.deadId), 'queued');
    assert.equal((await s.client.getJob(s.succeededId)).status, 'succeeded');
  });
});

describe('dashboard: history and charts', () => {
  test('a retry from the job page is a marker row in its history: who, from where, after how many attempts', async () => {
    const app = createDashboard({ client: s.full });
    const jar = new Jar();
    const csrf = csrfOf((await get(app, `/jobs/${s.deadId}`, jar)).text);
    assert.equal((await post(app, `/jobs/${s.deadId}/retry`, { csrf }, jar, {}, '127.0.0.1')).res.status, 303);
    const { text } = await get(app, `/jobs/${s.deadId}`, jar);
    assert.match(text, /<td class="num event" data-label="#">.*<td class="event" data-label="Event" colspan="6"><span class="strong">retried by <\/span><span class="mono">dashboard:session-[0-9a-f]{8}<\/span> from <span class="mono">127\.0\.0\.1<\/span> at <time datetime="[^"]+">[^<]+<\/time>, after 1 attempt \(was dead\)/);
    assert.match(text, /<td class="num" data-label="#">1 · run 1<\/td>/);
    const live = await getJson<{ tables: { attempts: { p: { t?: string }[] }[][] } }>(app, `/api/jobs/${s.deadId}`, jar);
    assert.equal(live.body!.tables.attempts.length, 2);
    assert.equal(live.body!.tables.attempts[1]![1]!.p[0]!.t, 'retried by ');
  });

  test('the charts page draws the known attempts, per range', async () => {
    const app = createDashboard({ client: s.full });
    const { res, text } = await get(app, '/charts');
    assert.equal(res.status, 200);
    assert.match(text, /<a href="\/charts" class="on" aria-current="page">Charts<\/a>/);
    assert.match(text, /<title id="thr-t">Throughput by outcome, last hour: 2 attempts<\/title>/);
    assert.match(text, /<title id="fail-t">Failures by type, last hour: 1 failed attempt<\/title>/);
    assert.equal((text.match(/<svg class="chart" viewBox="0 0 360 190" width="100%"/g) ?? []).length, 4);
    assert.match(text, /<rect class="o-succeeded" [^>]+><title>[^<]+ succeeded: 1<\/title>/);
    assert.match(text, /<rect class="k0" [^>]+><title>[^<]+ send-email: 1<\/title>/);
    // the numbers behind each chart, in a disclosure
    assert.match(text, /<details><summary>Throughput as numbers<\/summary><div class="tbl"><table><thead><tr><th>From<\/th><th class="num">succeeded<\/th><th class="num">dead<\/th><\/tr><\/thead><tbody>\n<tr><td><time datetime="[^"]+">[^<]+<\/time><\/td><td class="num">[01]<\/td>/);
    assert.match((await get(app, '/charts?range=week')).text, /last week: 2 attempts/);
    assert.equal((await get(app, '/charts?range=year')).res.status, 400);
    assert.equal((await get(createDashboard({ client: s.client }), '/charts')).res.status, 404);
  });
});

describe('dashboard: the new pages are escaped and guarded', () => {
  test('attacker text is escaped on the search, its JSON, the history, the charts and the bulk confirmation', async () => {
    const app = createDashboard({ client: s.full });
    const jar = new Jar();
    const csrf = csrfOf((await get(app, `/jobs/${s.deadId}`, jar)).text);
    await post(app, `/jobs/${s.deadId}/retry`, { csrf }, jar);
    for (const path of [`/jobs?q=${encodeURIComponent(XSS)}`, `/jobs?key=${encodeURIComponent(XSS)}*`, `/jobs/${s.deadId}`, '/charts', '/']) {
      const { text } = await get(app, path, jar);
      assert.deepEqual(foreignScripts(text), [], path);
      assert.ok(!text.includes(XSS), `${path} carries the raw payload`);
    }
    assert.match((await get(app, `/jobs?q=${encodeURIComponent(XSS)}`, jar)).text, /value="&lt;script&gt;alert\(1\)&lt;\/script&gt;"/);
    for (const path of [`/api/jobs?q=${encodeURIComponent(XSS)}`, `/api/bulk?action=retry&q=${encodeURIComponent(XSS)}`, `/api/jobs/${s.deadId}`]) {
      const json = await get(app, path, jar);
      assert.equal(json.res.status, 200, path);
      assert.ok(!json.text.includes('<'), `${path}: JSON has no raw <`);
    }
    const ask = await post(app, '/jobs/bulk', { csrf, action: 'retry', queue: XSS }, jar);
    assert.equal(ask.res.status, 400);
    assert.ok(!ask.text.includes(XSS));
  });

  test('with a token every new page and endpoint needs the credentials', async () => {
    const app = createDashboard({ client: s.full, token: TOKEN });
    for (const path of ['/jobs?q=mail', '/charts', `/jobs/${s.deadId}`]) {
      const { res } = await get(app, path);
      assert.equal(res.status, 303, path);
      assert.match(res.headers.get('location') ?? '', /^\/login\?next=/);
    }
    assert.equal((await get(app, '/api/jobs?q=mail')).res.status, 401);
    assert.equal((await get(app, '/api/bulk?action=retry&status=dead')).res.status, 401);
    assert.equal((await post(app, '/jobs/bulk', { action: 'retry', status: 'dead', confirmed: '1' })).res.status, 401);
    assert.equal(await statusOf(s.deadId), 'dead');
    const bearer = { authorization: `Bearer ${TOKEN}` };
    assert.equal((await get(app, '/charts', new Jar(), bearer)).res.status, 200);
    assert.equal((await get(app, '/api/jobs?q=mail', new Jar(), bearer)).res.status, 200);
  });
});
