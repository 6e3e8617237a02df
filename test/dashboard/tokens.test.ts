/**
 * The dashboard's token rules over HTTP (Hono's `app.request`, memory storage): refused beyond
 * loopback without a token, DNS rebinding, bearer and login-cookie sessions, no open redirect.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard, serveDashboard } from '../../src/dashboard/index.js';
import type { Seeded } from './support.js';
import { Jar, TOKEN, csrfOf, get, post, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

const statusOf = async (id: string) => (await s.client.getJob(id)).status;

describe('dashboard: tokens', () => {
  test('a non-loopback host without a token is refused; loopback hosts are fine', async () => {
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'example.com']) {
      assert.throws(() => createDashboard({ client: s.client, host }), /needs a token/, host);
      await assert.rejects(serveDashboard({ client: s.client, host, port: 0 }), /needs a token/);
    }
    for (const host of ['127.0.0.1', '::1', 'localhost']) createDashboard({ client: s.client, host });
    assert.throws(() => createDashboard({ client: s.client, token: 'short' }), /at least 16/);
  });

  test('without a token, requests for a non-loopback Host are refused (DNS rebinding)', async () => {
    const app = createDashboard({ client: s.client });
    const res = await app.request('http://attacker.example/');
    assert.equal(res.status, 403);
    assert.equal((await app.request('http://127.0.0.1:8080/')).status, 200);
  });

  test('with a token: no credentials → login redirect (GET) or 401 (POST); bearer works', async () => {
    const app = createDashboard({ client: s.client, token: TOKEN, host: '0.0.0.0' });
    const r = await get(app, `/jobs/${s.deadId}`);
    assert.equal(r.res.status, 303);
    assert.equal(r.res.headers.get('location'), `/login?next=${encodeURIComponent(`/jobs/${s.deadId}`)}`);
    assert.ok(!r.text.includes('alert'));
    assert.equal((await post(app, `/jobs/${s.deadId}/retry`, {})).res.status, 401);
    const wrong = (await get(app, '/', new Jar(), { authorization: 'Bearer wrong-token-0123456789' })).res;
    assert.equal(wrong.status, 401);
    assert.match(wrong.headers.get('www-authenticate') ?? '', /^Bearer /);
    assert.equal(wrong.headers.get('x-frame-options'), 'DENY');
    for (const authorization of ['Bearer', 'Basic dXNlcjpwYXNz', `Bearer ${TOKEN} extra`]) {
      assert.ok([400, 401].includes((await get(app, '/', new Jar(), { authorization })).res.status), authorization);
    }
    const ok = await get(app, `/jobs/${s.deadId}`, new Jar(), { authorization: `Bearer ${TOKEN}` });
    assert.equal(ok.res.status, 200);
    // bearer POSTs still need the form's CSRF token
    assert.equal((await post(app, `/jobs/${s.deadId}/retry`, {}, new Jar(), { authorization: `Bearer ${TOKEN}` })).res.status, 403);
    const done = await post(app, `/jobs/${s.deadId}/retry`, { csrf: csrfOf(ok.text) }, new Jar(), { authorization: `Bearer ${TOKEN}` });
    assert.equal(done.res.status, 303);
    assert.equal(await statusOf(s.deadId), 'queued');
  });

  test('login form: wrong token → 401; right token → HttpOnly SameSite=Strict cookie, fresh session, then actions work', async () => {
    const app = createDashboard({ client: s.client, token: TOKEN });
    const jar = new Jar();
    const login = await get(app, '/login?next=/jobs', jar);
    assert.equal(login.res.status, 200);
    const preSid = jar.cookies.get('leasehold_sid');
    const csrf = csrfOf(login.text);
    assert.equal((await post(app, '/login', { csrf: 'nope', token: TOKEN, next: '/jobs' }, jar)).res.status, 403);
    const bad = await post(app, '/login', { csrf, token: 'not-the-token-at-all', next: '/jobs' }, jar);
    assert.equal(bad.res.status, 401);
    assert.match(bad.text, /not right/);
    const good = await post(app, '/login', { csrf, token: TOKEN, next: '/jobs' }, jar);
    assert.equal(good.res.status, 303);
    assert.equal(good.res.headers.get('location'), '/jobs');
    const set = good.res.headers.getSetCookie().join('\n');
    assert.match(set, /leasehold_auth=.*HttpOnly.*SameSite=Strict/);
    assert.notEqual(jar.cookies.get('leasehold_sid'), preSid, 'the session id is rotated on login');
    const page = await get(app, `/jobs/${s.deadId}`, jar);
    assert.equal(page.res.status, 200);
    assert.equal((await post(app, `/jobs/${s.deadId}/retry`, { csrf: csrfOf(page.text) }, jar)).res.status, 303);
    assert.equal(await statusOf(s.deadId), 'queued');
    // an auth cookie is bound to its session: with another sid it does not count
    const stolen = new Jar();
    stolen.cookies.set('leasehold_auth', jar.cookies.get('leasehold_auth')!);
    assert.equal((await get(app, '/', stolen)).res.status, 303);
    // sign out ends it
    await post(app, '/logout', { csrf: csrfOf(page.text) }, jar);
    assert.equal((await get(app, '/', jar)).res.status, 303);
  });

  test('login never redirects off the dashboard', async () => {
    const app = createDashboard({ client: s.client, token: TOKEN });
    for (const next of ['https://evil.example/', '//evil.example/', '/\\evil.example']) {
      const jar = new Jar();
      const csrf = csrfOf((await get(app, '/login', jar)).text);
      const r = await post(app, '/login', { csrf, token: TOKEN, next }, jar);
      assert.equal(r.res.headers.get('location'), '/', next);
    }
  });
});
