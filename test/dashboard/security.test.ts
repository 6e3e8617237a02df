/**
 * The tightened rules over HTTP: sign-out ends the session on the server (the same cookies
 * replayed afterwards are refused, pages and JSON alike), sign-in attempts are throttled per
 * client address and overall (429 with Retry-After, even for the right token), the Host header
 * is checked with a token too (DNS rebinding), and the JSON endpoints sit behind the same auth.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import { SessionStore } from '../../src/dashboard/sessions.js';
import { SignInThrottle } from '../../src/dashboard/throttle.js';
import type { Seeded } from './support.js';
import { Jar, TOKEN, csrfOf, get, getJson, post, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

async function signIn(app: ReturnType<typeof createDashboard>, jar = new Jar(), address = '10.0.0.1') {
  const csrf = csrfOf((await get(app, '/login', jar)).text);
  const r = await post(app, '/login', { csrf, token: TOKEN, next: '/' }, jar, {}, address);
  assert.equal(r.res.status, 303);
  return jar;
}

describe('dashboard: sign-out ends the session on the server', () => {
  test('cookies copied before sign-out are refused after it, on pages and JSON', async () => {
    const app = createDashboard({ client: s.client, token: TOKEN });
    const jar = await signIn(app);
    const copy = new Jar();
    for (const [k, v] of jar.cookies) copy.cookies.set(k, v);
    assert.equal((await get(app, '/', copy)).res.status, 200, 'the copy works while signed in');
    assert.equal((await get(app, '/api/overview', copy)).res.status, 200);
    const page = await get(app, '/', jar);
    assert.equal((await post(app, '/logout', { csrf: csrfOf(page.text) }, jar)).res.status, 303);
    const replay = await get(app, '/', copy);
    assert.equal(replay.res.status, 303);
    assert.match(replay.res.headers.get('location') ?? '', /^\/login/);
    const api = await getJson(app, '/api/overview', copy);
    assert.equal(api.res.status, 401);
    assert.deepEqual(api.body, { error: 'Sign in first.' });
    // and a POST with the old session's own CSRF token
    assert.equal((await post(app, `/jobs/${s.deadId}/retry`, { csrf: csrfOf(page.text) }, copy)).res.status, 401);
    assert.equal((await s.client.getJob(s.deadId)).status, 'dead');
  });

  test('the JSON endpoints need the same credentials: 401 JSON without, 200 with bearer', async () => {
    const app = createDashboard({ client: s.full, token: TOKEN });
    for (const path of ['/api/overview', '/api/jobs', `/api/jobs/${s.deadId}`, '/api/queues', '/api/schedules', '/api/locks', '/api/workers']) {
      const anon = await getJson(app, path);
      assert.equal(anon.res.status, 401, path);
      assert.equal(anon.res.headers.get('location'), null, 'no redirect for a script');
      assert.equal((await get(app, path, new Jar(), { authorization: `Bearer ${TOKEN}` })).res.status, 200, path);
    }
  });
});

describe('dashboard: sign-in throttling', () => {
  test('five wrong tokens from one address: the sixth try is refused with 429, even the right token; another address goes on', async () => {
    const app = createDashboard({ client: s.client, token: TOKEN });
    const jar = new Jar();
    const csrf = csrfOf((await get(app, '/login', jar)).text);
    for (let i = 0; i < 5; i++) assert.equal((await post(app, '/login', { csrf, token: `wrong-token-${i}-0123456789` }, jar, {}, '10.0.0.7')).res.status, 401);
    const refused = await post(app, '/login', { csrf, token: TOKEN }, jar, {}, '10.0.0.7');
    assert.equal(refused.res.status, 429);
    assert.match(refused.res.headers.get('retry-after') ?? '', /^\d+$/);
    assert.match(refused.text, /Too many sign-in attempts/);
    assert.match(refused.res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    assert.equal(jar.cookies.has('leasehold_auth'), false);
    await signIn(app, new Jar(), '10.0.0.8');
  });

  test('failures spread over many addresses hit the overall limit', async () => {
    const app = createDashboard({ client: s.client, token: TOKEN });
    const jar = new Jar();
    const csrf = csrfOf((await get(app, '/login', jar)).text);
    let status = 401;
    let tries = 0;
    while (status === 401 && tries < 100) status = (await post(app, '/login', { csrf, token: 'wrong-token-0123456789' }, jar, {}, `10.1.${tries >> 8}.${tries++ & 255}`)).res.status;
    assert.equal(status, 429);
    assert.equal(tries, 31, 'thirty failures in a burst, then the overall bucket is empty');
  });

  test('the buckets refill with time and stay bounded in size', () => {
    let now = 0;
    const t = new SignInThrottle({ perClient: { burst: 2, refillMs: 1000 }, global: { burst: 100, refillMs: 10 }, maxClients: 3, now: () => now });
    t.failed('a');
    t.failed('a');
    assert.equal(t.check('a'), 1000);
    now = 400;
    assert.equal(t.check('a'), 600);
    now = 1000;
    assert.equal(t.check('a'), 0);
    for (const c of ['b', 'c', 'd', 'e']) t.failed(c);
    assert.ok(t.clients <= 3);
  });

  test('the session store forgets expired sessions and never grows past its bound', () => {
    let now = 0;
    const store = new SessionStore(2, () => now);
    store.add('a', 100);
    store.add('b', 200);
    assert.ok(store.valid('a'));
    store.add('c', 300);
    assert.equal(store.size, 2);
    assert.equal(store.valid('a'), false, 'the oldest went when full');
    now = 250;
    assert.equal(store.valid('b'), false, 'expired');
    assert.ok(store.valid('c'));
    store.revoke('c');
    assert.equal(store.valid('c'), false);
  });
});

describe('dashboard: the Host header with a token', () => {
  test('a name it was not told about is refused (DNS rebinding); loopback, host, allowedOrigins and allowedHosts are served', async () => {
    const app = createDashboard({ client: s.client, token: TOKEN, host: '10.0.0.5', allowedOrigins: ['https://dash.example'], allowedHosts: ['ops.example.com', 'OPS2.example.com:8443'] });
    const bearer = { authorization: `Bearer ${TOKEN}` };
    for (const url of ['http://attacker.example/', 'http://10.0.0.6/', 'http://ops.example.com.attacker.example/']) {
      const res = await app.request(url, { headers: bearer });
      assert.equal(res.status, 403, url);
      assert.match(await res.text(), /does not answer for the host/);
    }
    for (const url of ['http://127.0.0.1:8080/', 'http://localhost/', 'http://[::1]:8080/', 'http://10.0.0.5:8080/', 'https://dash.example/', 'http://ops.example.com/', 'http://ops2.example.com/']) {
      assert.equal((await app.request(url, { headers: bearer })).status, 200, url);
    }
    // listening on every interface allows no name by itself
    const any = createDashboard({ client: s.client, token: TOKEN, host: '0.0.0.0' });
    assert.equal((await any.request('http://192.168.1.9/', { headers: bearer })).status, 403);
    assert.throws(() => createDashboard({ client: s.client, token: TOKEN, allowedHosts: ['https://x.example/'] }), /allowedHosts/);
  });
});
