/**
 * The dashboard's `/metrics`, `/healthz` and `/readyz`: metrics behind the dashboard's token
 * (a Prometheus bearer token gets them) and its loopback rule; health checks open to probes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import { createHealth } from '../../src/observe/health.js';
import type { Health } from '../../src/observe/health.js';
import { createMetrics } from '../../src/observe/metrics.js';
import type { Metrics } from '../../src/observe/metrics.js';
import { Client } from '../../src/runtime/client.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { TOKEN } from '../dashboard/support.js';
import { valueOf } from './support.js';

describe('dashboard: metrics and health', () => {
  let storage: Storage;
  let observe: { metrics: Metrics; health: Health };
  before(async () => {
    storage = memoryStorage();
    await storage.migrate();
    await new Client({ storage }).enqueue('nobody-runs-this', {});
    observe = { metrics: createMetrics({ storage }), health: createHealth({ storage }) };
  });
  after(async () => {
    observe.health.close();
    await observe.metrics.close();
    await storage.close();
  });

  test('with a token: /metrics needs the bearer token, /healthz and /readyz do not', async () => {
    const app = createDashboard({ client: new Client({ storage }), token: TOKEN, observe, basePath: '/ops' });
    const anonymous = await app.request('/ops/metrics');
    assert.notEqual(anonymous.status, 200);
    assert.doesNotMatch(await anonymous.text(), /leasehold_/);
    assert.equal((await app.request('/ops/metrics', { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status, 401);
    const scraped = await app.request('/ops/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(scraped.status, 200);
    assert.match(scraped.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    assert.equal(valueOf(await scraped.text(), 'leasehold_jobs', { queue: 'default', type: 'nobody-runs-this', status: 'queued' }), 1);
    for (const p of ['/ops/healthz', '/ops/readyz']) {
      const res = await app.request(p, { headers: { host: 'worker-7.internal:8080' } });
      assert.equal(res.status, 200, p);
      assert.equal(((await res.json()) as { ok: boolean }).ok, true);
      assert.equal(res.headers.get('x-frame-options'), 'DENY', 'the dashboard headers apply');
    }
  });

  test('without a token: /metrics on loopback only; health from anywhere', async () => {
    const app = createDashboard({ client: new Client({ storage }), observe });
    assert.equal((await app.request('/metrics')).status, 200);
    assert.equal((await app.request('/metrics', { headers: { host: 'evil.example' } })).status, 403);
    assert.equal((await app.request('/healthz', { headers: { host: 'evil.example' } })).status, 200);
  });

  test('a dashboard without observe has no such pages', async () => {
    const app = createDashboard({ client: new Client({ storage }) });
    for (const p of ['/metrics', '/healthz', '/readyz']) assert.equal((await app.request(p)).status, 404, p);
  });
});
