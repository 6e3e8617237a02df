/**
 * examples/grafana/leasehold.json asks only for metrics leasehold exports (a renamed metric
 * would leave its panel empty); the Prometheus test runs its queries against a real server.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMetrics } from '../../src/observe/metrics.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { dashboardQueries } from './support.js';

test('every metric the Grafana dashboard queries is one leasehold exports', async () => {
  const storage = memoryStorage();
  const metrics = createMetrics({ storage });
  const exported = new Set(metrics.registry.getMetricsAsArray().map((m) => m.name));
  const queried = new Set(dashboardQueries().flatMap((q) => [...q.matchAll(/\bleasehold_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ''))));
  assert.ok(queried.size >= 10, `the dashboard queries ${queried.size} metrics`);
  assert.deepEqual([...queried].filter((n) => !exported.has(n)), []);
  await metrics.close();
  await storage.close();
});
