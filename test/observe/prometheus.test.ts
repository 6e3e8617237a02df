/**
 * A real Prometheus (Debian's /usr/bin/prometheus, spawned here with its own config and data
 * directory, never as a service) scrapes `leasehold worker --metrics-port` every second; the
 * test asks its HTTP API for the attempts the worker ran and for the age of the oldest due
 * job of a queue no worker serves, on SQLite and PostgreSQL.
 *
 * No Prometheus: the suite is SKIPPED loudly; it fails instead when
 * LEASEHOLD_REQUIRE_PROMETHEUS=1 or LEASEHOLD_REQUIRE_DBS=all (CI).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { appendFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { Client } from '../../src/runtime/client.js';
import { openStorage } from '../../src/storage/open.js';
import { CliProcess, ROOT, killAll } from '../process/support-cli.js';
import { dropPostgresSchema } from '../runtime/support-storages.js';
import { waitFor } from '../runtime/support.js';
import { TEST_URLS, serverFor } from '../support/databases.js';
import { dashboardQueries } from './support.js';
import { freePort } from '../support/net.js';

const PROMETHEUS = process.env.LEASEHOLD_PROMETHEUS ?? '/usr/bin/prometheus';
const HANDLERS = path.join(ROOT, 'test/cli/fixtures/handlers.ts');
const required = process.env.LEASEHOLD_REQUIRE_PROMETHEUS === '1' || (process.env.LEASEHOLD_REQUIRE_DBS ?? '').split(',').includes('all');

function skipReason(): string | null {
  if (existsSync(PROMETHEUS)) return null;
  const msg = `no Prometheus at ${PROMETHEUS} (apt-get install -y prometheus, or set LEASEHOLD_PROMETHEUS)`;
  if (required) throw new Error(`Prometheus test: ${msg}, and CI requires it`);
  const line = `SKIPPED Prometheus scrape test: ${msg}.`;
  process.stderr.write(`\n!!! ${line}\n\n`);
  if (process.env.LEASEHOLD_SKIP_REPORT) appendFileSync(process.env.LEASEHOLD_SKIP_REPORT, `${line}\n`);
  return line;
}


/**
 * Prometheus on a temp config scraping `target` every second; its API at `api`, once it says it
 * is ready. A port taken between freePort() and Prometheus's bind is tried again on a new one.
 */
async function startPrometheus(dir: string, target: string): Promise<{ child: ChildProcess; api: string; log: () => string }> {
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(config, ['global:', '  scrape_interval: 1s', '  evaluation_interval: 1s', 'scrape_configs:', '  - job_name: leasehold', '    static_configs:', `      - targets: ['${target}']`, ''].join('\n'));
  for (let tries = 1; ; tries++) {
    const port = await freePort();
    const child = spawn(PROMETHEUS, [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'tsdb')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (log = (log + d).slice(-4_000)));
    // 'close', not 'exit': its stderr, which says why it stopped, has been read by then
    let closed = false;
    child.once('close', () => (closed = true));
    const ready = async () =>
      fetch(`http://127.0.0.1:${port}/-/ready`, { signal: AbortSignal.timeout(2_000) }).then(async (r) => {
        const body = await r.text();
        return r.ok && body.includes('Prometheus');
      }, () => false);
    let state: 'ready' | 'closed';
    try {
      state = await waitFor(async () => (closed ? 'closed' : (await ready()) ? 'ready' : null), 60_000, 'Prometheus to be ready');
    } catch (e) {
      child.kill('SIGKILL');
      if (!closed) await once(child, 'close');
      throw new Error(`${(e as Error).message}; its log: ${log}`);
    }
    if (state === 'ready') return { child, api: `http://127.0.0.1:${port}/api/v1`, log: () => log };
    if (tries === 3 || !/address already in use/.test(log)) throw new Error(`Prometheus exited: ${log}`);
  }
}

/** The instant query's result vector; a query Prometheus refuses throws. */
async function query(api: string, q: string): Promise<{ value: [number, string] }[]> {
  const res = await fetch(`${api}/query?query=${encodeURIComponent(q)}`);
  const body = (await res.json()) as { status: string; data?: { result: { value: [number, string] }[] } };
  if (body.status !== 'success') throw new Error(`query ${q}: ${JSON.stringify(body)}`);
  return body.data?.result ?? [];
}

/** The instant query's one value, or undefined when it has no result (yet). */
async function queryValue(api: string, q: string): Promise<number | undefined> {
  const [first] = await query(api, q);
  return first === undefined ? undefined : Number(first.value[1]);
}

const skip = skipReason();

describe('a real Prometheus scrapes leasehold worker --metrics-port', { skip: skip ?? false }, () => {
  after(killAll);

  for (const kind of ['sqlite', 'postgres'] as const) {
    test(kind, async (t) => {
      if (kind === 'postgres' && (await serverFor('postgres', `Prometheus scrape (${kind})`)) === null) return t.skip('postgres server unreachable');
      const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-prom-'));
      const schema = `lh_prom_${randomBytes(5).toString('hex')}`;
      const pgUrl = new URL(TEST_URLS.postgres);
      pgUrl.searchParams.set('schema', schema);
      const db = kind === 'sqlite' ? `sqlite:${path.join(dir, 'jobs.db')}` : pgUrl.toString();
      let prometheus: Awaited<ReturnType<typeof startPrometheus>> | undefined;
      try {
        const storage = await openStorage(db);
        await storage.migrate();
        const client = new Client({ storage });
        for (let i = 0; i < 6; i++) await client.enqueue('hello', { name: `n${i}` });
        for (let i = 0; i < 2; i++) await client.enqueue('always-fails', {}, { maxAttempts: 1 });
        // due ten minutes ago, of a type the worker has no handler for: they stay due
        for (let i = 0; i < 2; i++) await client.enqueue('nobody-handles-this', {}, { queue: 'stuck', runAt: new Date(Date.now() - 600_000) });
        await storage.close();

        const worker = new CliProcess(['--db', db, 'worker', '--handlers', HANDLERS, '--metrics-port', '0', '--metrics-sample-interval', '5s', '--poll', '200ms'], {});
        const listening = await worker.waitFor('metrics.listening', 30_000);
        prometheus = await startPrometheus(dir, `127.0.0.1:${listening.port as number}`);
        const { api } = prometheus;
        const attempts = (labels: string) => queryValue(api, `sum(leasehold_attempts_total{${labels}})`);
        await waitFor(async () => (await attempts('')) === 8, 90_000, `Prometheus to hold 8 attempts (Prometheus log: ${prometheus.log()})`);
        assert.equal(await attempts('type="hello",queue="default",outcome="succeeded"'), 6);
        assert.equal(await attempts('type="always-fails",queue="default",outcome="dead"'), 2);
        assert.equal(await queryValue(api, 'sum(leasehold_attempt_duration_seconds_count)'), 8);
        const age = await waitFor(async () => queryValue(api, 'max(leasehold_queue_oldest_due_age_seconds{queue="stuck"})'), 30_000, 'the oldest due age of the stuck queue');
        assert.ok(age >= 590, `the stuck jobs are ten minutes overdue, Prometheus says ${age} s`);
        assert.equal(await queryValue(api, 'sum(leasehold_jobs{queue="stuck",status="queued"})'), 2);
        assert.equal(await queryValue(api, 'up{job="leasehold"}'), 1);
        // the Grafana example's queries are valid PromQL over these series
        for (const q of dashboardQueries()) await query(api, q);
        assert.ok((await query(api, dashboardQueries()[0]!)).length > 0, 'the stuck queue shows on the first panel');

        worker.signal('SIGTERM');
        assert.equal((await worker.waitExit(30_000)).code, 0, 'the worker and its metrics server stop on SIGTERM');
      } finally {
        prometheus?.child.kill('SIGTERM');
        if (prometheus && prometheus.child.exitCode === null) await new Promise((r) => prometheus?.child.once('exit', r));
        rmSync(dir, { recursive: true, force: true });
        if (kind === 'postgres') await dropPostgresSchema(schema);
      }
    });
  }
});
