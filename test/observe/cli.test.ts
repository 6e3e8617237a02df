/**
 * `leasehold worker --metrics-port`: the process serves /metrics, /healthz and /readyz while it
 * runs, counts the jobs it ran, and stops serving when SIGTERM stops the worker, giving the
 * sampler's lock up; a sampling
 * interval under the minimum is refused before anything starts.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { Client } from '../../src/runtime/client.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { SAMPLER_LOCK } from '../../src/observe/db-sampler.js';
import { cli, tempDb, withDb } from '../cli/support.js';
import { CliProcess, ROOT, killAll } from '../process/support-cli.js';
import { waitFor } from '../runtime/support.js';
import { valueOf } from './support.js';

const HANDLERS = path.join(ROOT, 'test/cli/fixtures/handlers.ts');

describe('leasehold worker --metrics-port', () => {
  const t = tempDb();
  after(async () => {
    await killAll();
    t.cleanup();
  });

  test('serves the metrics and the health checks while it runs, and stops with the worker', async () => {
    const storage = sqliteStorage({ path: t.file });
    await storage.migrate();
    const client = new Client({ storage });
    for (let i = 0; i < 3; i++) await client.enqueue('hello', { name: `n${i}` });
    await storage.close();

    const worker = new CliProcess(['--db', t.db, 'worker', '--handlers', HANDLERS, '--metrics-port', '0', '--poll', '100ms'], {});
    const { url } = (await worker.waitFor('metrics.listening', 30_000)) as unknown as { url: string };
    const metrics = () => fetch(`${url}metrics`).then((r) => r.text());
    // the first scrape takes the database sample, kept for 15 s: it must come after the three finishes landed (logged once written)
    await waitFor(() => worker.events('job.succeeded').length === 3, 30_000, 'three finishes written');
    await waitFor(async () => valueOf(await metrics(), 'leasehold_attempts_total', { type: 'hello', queue: 'default', outcome: 'succeeded' }) === 3, 15_000, 'three attempts counted');
    const text = await metrics();
    assert.equal(valueOf(text, 'leasehold_jobs', { queue: 'default', type: 'hello', status: 'succeeded' }), 3);
    assert.equal(valueOf(text, 'leasehold_worker_jobs_in_flight', { worker: worker.workerId }), 0);
    assert.ok(valueOf(text, 'process_cpu_user_seconds_total') !== undefined, "the CLI adds prom-client's process metrics");
    assert.equal((await fetch(`${url}healthz`)).status, 200);
    const ready = await fetch(`${url}readyz`);
    assert.equal(ready.status, 200);
    assert.equal(((await ready.json()) as { ok: boolean }).ok, true);

    const samplerLock = () => withDb(t.file, async (s) => (await s.locks.list({ name: SAMPLER_LOCK })).filter((l) => !l.expired));
    assert.equal((await samplerLock()).length, 1, 'the worker samples the database for the cluster');

    worker.signal('SIGTERM');
    assert.equal((await worker.waitExit(30_000)).code, 0);
    await assert.rejects(fetch(`${url}healthz`), 'nothing listens once the worker stopped');
    assert.deepEqual(await samplerLock(), [], 'the sampler lock was given up: another process samples at its next try');
  });

  test('a sampling interval under 5 s is refused', async () => {
    const r = await cli(['--db', t.db, 'worker', '--handlers', HANDLERS, '--metrics-port', '0', '--metrics-sample-interval', '1s']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /the sampling interval must be at least 5000 ms/);
  });
});
